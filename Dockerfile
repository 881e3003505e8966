# The pitfall-server runtime image: Debian slim, a system user, the server
# binary (the bundled rules are inside it), its state on the /data volume.
#
# `cargo xtask image` builds it: the binary with cargo, copied alone into
# the build context (target/image/context), then `podman build`. With
# docker: `docker build -f Dockerfile target/image/context`.
FROM docker.io/library/debian:bookworm-slim

# A fixed uid, so a volume's owner is the same on every host; no shell,
# no home beyond the data.
RUN groupadd --system --gid 10001 pitfall \
 && useradd --system --uid 10001 --gid pitfall --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin pitfall \
 && mkdir -p /data \
 && chown pitfall:pitfall /data \
 && chmod 0700 /data

COPY pitfall-server /usr/local/bin/pitfall-server

# The database (SQLite unless DATABASE_URL names PostgreSQL), the signing
# key (unless PITFALL_SIGNING_KEY_FILE), the watch secret key (unless
# PITFALL_SECRET_KEY_FILE) and the compiled-rule cache.
VOLUME /data
ENV PITFALL_LISTEN=0.0.0.0:8080 \
    PITFALL_DATA_DIR=/data
EXPOSE 8080
USER 10001:10001

# SIGTERM drains: no new connections, the requests in flight answered
# (up to PITFALL_SHUTDOWN_TIMEOUT_MS, 30 s by default), exit 0. Give the
# container a stop timeout above that (`podman stop -t 40`,
# `stop_grace_period: 40s`).
STOPSIGNAL SIGTERM
# `probe` asks GET /readyz on PITFALL_LISTEN: the image has no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
  CMD ["/usr/local/bin/pitfall-server", "probe"]
ENTRYPOINT ["/usr/local/bin/pitfall-server"]
CMD ["serve"]
