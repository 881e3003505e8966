/// Exports a rule: its entry point `pitfall_evaluate`, its metadata
/// (`rule.json`) and test cases (`tests.json`, both beside the crate's
/// `Cargo.toml`) as the custom sections of ABI v1, and natively a `#[test]`
/// that runs those cases.
///
/// ```ignore
/// use pitfall_sdk::prelude::*;
///
/// fn evaluate(m: &Manifest) -> Outcome {
///     match m.arch() {
///         None => Outcome::needs("host.arch"),
///         Some(a) if a == "aarch64" => Outcome::matched().evidence("host.arch"),
///         Some(_) => Outcome::clear(),
///     }
/// }
///
/// pitfall_sdk::export_rule!(evaluate);
/// ```
///
/// `evaluate` takes `&Manifest` and returns an [`Outcome`](crate::Outcome)
/// or `Result<Outcome, Outcome>` (so `?` works with
/// [`Manifest::need`](crate::view::Manifest::need)).
#[macro_export]
macro_rules! export_rule {
    ($evaluate:path) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            // No `#[used]`: on wasm, rustc turns link_section statics into
            // custom sections by itself, and `#[used]` would also keep a
            // second copy of the bytes in linear memory.
            #[unsafe(link_section = "pitfall.abi")]
            static PITFALL_ABI: [u8; 1] = *b"1";

            const META: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/rule.json"));
            const TESTS: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests.json"));

            // Embedded without the files' indentation and line ends.
            #[unsafe(link_section = "pitfall.meta")]
            static PITFALL_META: [u8; $crate::__private::compact_len(META)] =
                $crate::__private::compact(META);

            #[unsafe(link_section = "pitfall.tests")]
            static PITFALL_TESTS: [u8; $crate::__private::compact_len(TESTS)] =
                $crate::__private::compact(TESTS);

            #[unsafe(no_mangle)]
            extern "C" fn pitfall_evaluate() -> i32 {
                $crate::__private::run($evaluate)
            }
        };

        // Natively the entry point is used only by the test below; keep the
        // rule's functions "used" in plain builds too.
        #[cfg(not(target_arch = "wasm32"))]
        const _: () = {
            let _ = $evaluate;
        };

        $crate::__native_cases_test!($evaluate);
    };
}

/// The `#[test]` that runs a rule's embedded cases natively, when the
/// SDK's `testing` feature (the native host) is on; nothing otherwise.
#[cfg(feature = "testing")]
#[doc(hidden)]
#[macro_export]
macro_rules! __native_cases_test {
    ($evaluate:path) => {
        #[cfg(all(test, not(target_arch = "wasm32")))]
        #[test]
        fn embedded_cases_pass_natively() {
            $crate::testing::assert_cases_pass(
                include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/rule.json")),
                include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests.json")),
                &|| $crate::__private::run($evaluate),
            );
        }
    };
}

/// Without the `testing` feature there is no native host: no test.
#[cfg(not(feature = "testing"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __native_cases_test {
    ($evaluate:path) => {};
}
