/* A Pitfall rule in C, written from sdk/ABI.md alone (ABI v1):
 * vLLM refuses GPUs below compute capability 7.0.
 *
 * Build:   pitfall rule build rule.c       (clang + wasm-ld, see ABI.md §16)
 * Test:    pitfall rule test rule.c        (the cases of tests.json, as wasm in the engine)
 * Publish: pitfall rule publish rule.c --server URL --token T
 *
 * No libc (-nostdlib): nothing here may call memcpy/memset implicitly. */

/* §4: host functions, imported from module "pitfall". */
#define PITFALL_IMPORT(name) __attribute__((import_module("pitfall"), import_name(name)))

PITFALL_IMPORT("field_kind") int field_kind(const char *path, int path_len);
PITFALL_IMPORT("field_num")  double field_num(const char *path, int path_len);
PITFALL_IMPORT("field_str")  int field_str(const char *path, int path_len, char *buf, int buf_cap);
PITFALL_IMPORT("evidence")   void evidence(const char *path, int path_len);
PITFALL_IMPORT("missing")    void missing(const char *path, int path_len);
PITFALL_IMPORT("param")      void param(const char *key, int key_len, const char *value, int value_len);

/* §2: outcome codes returned by pitfall_evaluate. */
enum { CLEAR = 0, MATCHED = 1, UNDETERMINED = 2 };
/* §4.3: field_kind codes (0 = missing). */
enum { KIND_MISSING = 0 };

/* A string literal as (pointer, length), without the terminating NUL. */
#define S(lit) (lit), (int)(sizeof(lit) - 1)
/* §5: a field path; accelerators.0 is the first accelerator entry. */
#define CC "accelerators.0.compute_capability"

__attribute__((export_name("pitfall_evaluate")))
int pitfall_evaluate(void) {
    /* Keep the promise of applies_to (`package:vllm`, `accelerator:nvidia`):
     * the publish pipeline re-runs each matched case with each selector made
     * false, and refuses a rule that still matches. */
    if (field_kind(S("packages.vllm")) == KIND_MISSING) return CLEAR;
    char vendor[8];
    if (field_str(S("accelerators.0.vendor"), vendor, sizeof vendor) != 6 || vendor[0] != 'n' ||
        vendor[1] != 'v' || vendor[2] != 'i' || vendor[3] != 'd' || vendor[4] != 'i' || vendor[5] != 'a')
        return CLEAR;
    /* §6: the host has already enriched known GPUs (a V100 gets 7.0). */
    if (field_kind(S(CC)) == KIND_MISSING) {
        missing(S(CC));                 /* §7.5: say which field is needed */
        return UNDETERMINED;
    }
    double cc = field_num(S(CC));       /* NaN when not numeric */
    if (!(cc < 7.0)) return CLEAR;      /* also clear for NaN */
    char buf[32];
    int n = field_str(S(CC), buf, sizeof buf);
    if (n < 0 || n > (int)sizeof buf) n = 0;   /* -1 missing, -2 wrong kind, > cap: not copied */
    evidence(S(CC));                    /* §7.2 */
    param(S("cc"), buf, n);             /* §7.3: fills {cc} in the message */
    return MATCHED;
}

/* §3: the custom sections, as module-level assembly; `.incbin` paths are
 * relative to the folder clang runs in (pitfall rule build runs it here). */
__asm__(".section .custom_section.pitfall.abi,\"\",@\n.ascii \"1\"\n");
__asm__(".section .custom_section.pitfall.meta,\"\",@\n.incbin \"rule.json\"\n");
__asm__(".section .custom_section.pitfall.tests,\"\",@\n.incbin \"tests.json\"\n");
