//! Reading the manifest's types in one pass. Every level keeps unknown
//! members in `extra`, and `#[serde(flatten)]` would do that by first
//! buffering the whole object (each key and value) in serde's private
//! content tree and then reading the fields out of that: for a manifest of
//! a few hundred packages that was most of the time spent reading one.
//! These readers match each key as it comes and read its value straight
//! into its field; what they accept, and the errors they give, are the
//! derived reader's (`duplicate field`, `missing field`, `invalid type`).

use std::fmt;

use serde::de::{Error, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{
    Accelerator, Build, Cloud, Container, Drivers, Extra, HealthCheck, Host, Manifest, Os, Package,
    Python, Workload, string_or_number,
};

/// A member's name: borrowed from the text when it has no escapes, so a
/// known field is matched without allocating.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }

    fn into_owned(self) -> String {
        match self {
            Key::Borrowed(s) => s.to_owned(),
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(s))
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s.to_owned()))
            }
            fn visit_string<E: Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s))
            }
        }
        de.deserialize_str(KeyVisitor)
    }
}

/// A field that tools print as a string or a number (`"7.5"` or `7.5`).
struct StringOrNumber(Option<String>);

impl<'de> Deserialize<'de> for StringOrNumber {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        string_or_number(de).map(StringOrNumber)
    }
}

/// `Deserialize` for a manifest type with an `extra` map: `required`
/// fields must be present, `optional` ones default when absent, and
/// `string_or_number` ones are optional and read through
/// [`StringOrNumber`]. Every other member goes to `extra`, the last of a
/// repeated unknown member winning as in a JSON value; a repeated known
/// field is an error, as the derived reader makes it.
macro_rules! read_with_extra {
    (
        $ty:ident,
        required: [$($required:ident),*],
        optional: [$($optional:ident),*],
        string_or_number: [$($son:ident),*] $(,)?
    ) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
                struct Fields;
                impl<'de> Visitor<'de> for Fields {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("struct ", stringify!($ty)))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$ty, A::Error> {
                        $(let mut $required = None;)*
                        $(let mut $optional = None;)*
                        $(let mut $son: Option<Option<String>> = None;)*
                        let mut extra = Extra::new();
                        while let Some(key) = map.next_key::<Key<'de>>()? {
                            match key.as_str() {
                                $(stringify!($required) => {
                                    if $required.is_some() {
                                        return Err(A::Error::duplicate_field(stringify!($required)));
                                    }
                                    $required = Some(map.next_value()?);
                                })*
                                $(stringify!($optional) => {
                                    if $optional.is_some() {
                                        return Err(A::Error::duplicate_field(stringify!($optional)));
                                    }
                                    $optional = Some(map.next_value()?);
                                })*
                                $(stringify!($son) => {
                                    if $son.is_some() {
                                        return Err(A::Error::duplicate_field(stringify!($son)));
                                    }
                                    $son = Some(map.next_value::<StringOrNumber>()?.0);
                                })*
                                _ => {
                                    let value = map.next_value()?;
                                    extra.insert(key.into_owned(), value);
                                }
                            }
                        }
                        Ok($ty {
                            $($required: $required.ok_or_else(|| A::Error::missing_field(stringify!($required)))?,)*
                            $($optional: $optional.unwrap_or_default(),)*
                            $($son: $son.unwrap_or_default(),)*
                            extra,
                        })
                    }
                }
                de.deserialize_map(Fields)
            }
        }
    };
}

read_with_extra!(
    Manifest,
    required: [manifest_version],
    optional: [host, accelerators, drivers, container, packages, env, build, workload, health_check, python],
    string_or_number: [],
);
read_with_extra!(
    Host,
    required: [],
    optional: [arch, cpu_model, memory_mib, os, kernel, cloud, cpu_flags, glibc, pcie_acs_enabled, system_packages_listed],
    string_or_number: [],
);
read_with_extra!(Os, required: [], optional: [id, version], string_or_number: []);
read_with_extra!(Cloud, required: [], optional: [provider, instance_type, image], string_or_number: []);
read_with_extra!(
    Accelerator,
    required: [],
    optional: [vendor, model, count, memory_mib, memory_bandwidth_gbps, shared_memory_per_block_kib, interconnect, architecture, gfx_target, mig_mode, mig_profile],
    string_or_number: [compute_capability],
);
read_with_extra!(
    Drivers,
    required: [],
    optional: [nvidia_kernel_module],
    string_or_number: [nvidia, cuda, cuda_driver, cuda_runtime, nvidia_userspace],
);
read_with_extra!(
    Container,
    required: [],
    optional: [image, shm_size_mib, ipc, engine, gpu_request, cgroup_driver],
    string_or_number: [],
);
read_with_extra!(
    Package,
    required: [name],
    optional: [version, ecosystem, cuda_arch_list, torch, cxx11_abi],
    string_or_number: [cuda],
);
read_with_extra!(Build, required: [], optional: [from_source, torch_cuda_arch_list, tools], string_or_number: []);
read_with_extra!(
    Workload,
    required: [],
    optional: [
        engine,
        model,
        parameters_b,
        dtype,
        head_dims,
        num_attention_heads,
        num_kv_heads,
        tensor_parallel_size,
        pipeline_parallel_size,
        max_model_len,
        max_num_seqs,
        gpu_memory_utilization,
        attention_backend,
        quantization,
        disable_custom_all_reduce,
        kv_cache_dtype,
        active_parameters_b,
        num_hidden_layers,
        hidden_size,
        max_context,
        model_dtype,
        model_type,
        architecture,
        min_transformers,
        quantization_scheme,
        quantization_symmetric,
        multimodal,
        mm_encoder_attention_backend,
        mode,
        attention_dropout,
        checkpoint_format,
        engine_hardware_compatibility,
        engine_version_compatible,
        max_input_tokens,
        sliding_window,
        rope_scaling_type
    ],
    string_or_number: [engine_build_capability, engine_build_tensorrt],
);
read_with_extra!(HealthCheck, required: [], optional: [endpoint, verifies_output], string_or_number: []);
read_with_extra!(Python, required: [], optional: [executable, externally_managed], string_or_number: []);
