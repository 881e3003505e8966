//! A manifest's canonical bytes, for the result cache's digest: what its
//! `Serialize` says, written as tagged, length-prefixed binary rather than
//! JSON text.
//!
//! Why not JSON: the digest hashed the manifest's JSON text, and most of
//! that time went to the text, not the hash: every string scanned for
//! characters to escape, every number formatted (a profile of the HTTP
//! bench: escaping 40 % of the digest, SHA-256 a quarter). Here a string
//! is its length and its bytes, copied; a number is its bits.
//!
//! What the digest needs is that two different manifests never give the
//! same bytes. Every value starts with a tag naming its kind, strings and
//! byte strings carry their length, and sequences, maps and structs end
//! with a tag of their own, so the bytes parse back into one sequence of
//! `Serialize` calls, which the derived `Serialize` of different values
//! never make alike. (Equal manifests give equal bytes: maps are
//! serialised in key order, as `BTreeMap` and `serde_json::Map` keep
//! them.) A struct's fields are written with their names, so a field left
//! out (`skip_serializing_if`) cannot pass for another.

use serde::ser::{self, Serialize};

/// The tag before each value.
mod tag {
    pub(super) const FALSE: u8 = 0;
    pub(super) const TRUE: u8 = 1;
    pub(super) const INT: u8 = 2;
    pub(super) const UINT: u8 = 3;
    pub(super) const INT128: u8 = 4;
    pub(super) const UINT128: u8 = 5;
    pub(super) const FLOAT: u8 = 6;
    pub(super) const CHAR: u8 = 7;
    pub(super) const STR: u8 = 8;
    pub(super) const BYTES: u8 = 9;
    pub(super) const NONE: u8 = 10;
    pub(super) const SOME: u8 = 11;
    pub(super) const UNIT: u8 = 12;
    pub(super) const UNIT_VARIANT: u8 = 13;
    pub(super) const NEWTYPE_VARIANT: u8 = 14;
    pub(super) const SEQ: u8 = 15;
    pub(super) const TUPLE_VARIANT: u8 = 16;
    pub(super) const MAP: u8 = 17;
    pub(super) const STRUCT: u8 = 18;
    pub(super) const STRUCT_VARIANT: u8 = 19;
    /// Closes a sequence, tuple, map or struct.
    pub(super) const END: u8 = 20;
}

/// A value's `Serialize` would not go through: none of the manifest's
/// types ever raises one, but a `Serialize` may.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EncodeError(String);

impl ser::Error for EncodeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        EncodeError(msg.to_string())
    }
}

/// Appends `value`'s canonical bytes to `out`.
pub fn encode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    value.serialize(&mut Encoder { out })
}

/// Writes into the buffer it borrows.
struct Encoder<'a> {
    out: &'a mut Vec<u8>,
}

impl Encoder<'_> {
    /// A length, LEB128: one byte below 128, as nearly every one is.
    fn len(&mut self, mut n: usize) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                self.out.push(byte);
                return;
            }
            self.out.push(byte | 0x80);
        }
    }

    fn bytes(&mut self, tag: u8, bytes: &[u8]) {
        self.out.push(tag);
        self.len(bytes.len());
        self.out.extend_from_slice(bytes);
    }

    fn tagged(&mut self, tag: u8, data: &[u8]) {
        self.out.push(tag);
        self.out.extend_from_slice(data);
    }

    fn variant(&mut self, tag: u8, index: u32) {
        self.out.push(tag);
        self.len(index as usize);
    }
}

/// `Serializer` methods that write their tag, then the value's bytes,
/// little-endian.
macro_rules! little_endian {
    ($($method:ident($ty:ty) => $tag:ident),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<(), EncodeError> {
            self.tagged(tag::$tag, &v.to_le_bytes());
            Ok(())
        }
    )*};
}

/// `Serializer` methods that widen their value and pass it on.
macro_rules! widened {
    ($($($narrow:ident($from:ty)),+ => $wide:ident($to:ty);)*) => {$($(
        fn $narrow(self, v: $from) -> Result<(), EncodeError> {
            self.$wide(<$to>::from(v))
        }
    )+)*};
}

impl<'a, 'b> ser::Serializer for &'a mut Encoder<'b> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> Result<(), EncodeError> {
        self.out.push(if v { tag::TRUE } else { tag::FALSE });
        Ok(())
    }
    // Every integer as its widest kind, so one value has one spelling
    // whatever field type holds it; a float as its bits.
    widened! {
        serialize_i8(i8), serialize_i16(i16), serialize_i32(i32) => serialize_i64(i64);
        serialize_u8(u8), serialize_u16(u16), serialize_u32(u32) => serialize_u64(u64);
        serialize_f32(f32) => serialize_f64(f64);
    }
    little_endian! {
        serialize_i64(i64) => INT, serialize_i128(i128) => INT128,
        serialize_u64(u64) => UINT, serialize_u128(u128) => UINT128,
    }
    fn serialize_f64(self, v: f64) -> Result<(), EncodeError> {
        self.tagged(tag::FLOAT, &v.to_bits().to_le_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), EncodeError> {
        self.tagged(tag::CHAR, &u32::from(v).to_le_bytes());
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), EncodeError> {
        self.bytes(tag::STR, v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), EncodeError> {
        self.bytes(tag::BYTES, v);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), EncodeError> {
        self.out.push(tag::NONE);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), EncodeError> {
        self.out.push(tag::SOME);
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), EncodeError> {
        self.out.push(tag::UNIT);
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), EncodeError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _name: &'static str, index: u32, _variant: &'static str) -> Result<(), EncodeError> {
        self.variant(tag::UNIT_VARIANT, index);
        Ok(())
    }
    // Transparent, as in JSON: the wrapper is the type's, not the value's.
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<(), EncodeError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        self.variant(tag::NEWTYPE_VARIANT, index);
        value.serialize(self)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self, EncodeError> {
        self.out.push(tag::SEQ);
        Ok(self)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self, EncodeError> {
        self.serialize_seq(None)
    }
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, EncodeError> {
        self.serialize_seq(None)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, EncodeError> {
        self.variant(tag::TUPLE_VARIANT, index);
        Ok(self)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self, EncodeError> {
        self.out.push(tag::MAP);
        Ok(self)
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, EncodeError> {
        self.out.push(tag::STRUCT);
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, EncodeError> {
        self.variant(tag::STRUCT_VARIANT, index);
        Ok(self)
    }
}

/// The compound serialisers: each element or field serialised in turn
/// (a struct's with its name first), then [`tag::END`].
macro_rules! compound {
    ($($trait:ident :: $method:ident),* $(,)?) => {$(
        impl ser::$trait for &mut Encoder<'_> {
            type Ok = ();
            type Error = EncodeError;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), EncodeError> {
                self.out.push(tag::END);
                Ok(())
            }
        }
    )*};
    ($($trait:ident),* ; named) => {$(
        impl ser::$trait for &mut Encoder<'_> {
            type Ok = ();
            type Error = EncodeError;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), EncodeError> {
                self.bytes(tag::STR, key.as_bytes());
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), EncodeError> {
                self.out.push(tag::END);
                Ok(())
            }
        }
    )*};
}

compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);
compound!(SerializeStruct, SerializeStructVariant; named);

impl ser::SerializeMap for &mut Encoder<'_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), EncodeError> {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), EncodeError> {
        self.out.push(tag::END);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn bytes<T: Serialize>(value: &T) -> Vec<u8> {
        let mut out = Vec::new();
        encode(value, &mut out).unwrap_or_else(|e| panic!("{e}"));
        out
    }

    /// Values that a looser encoding would confuse: strings split at a
    /// different place, a number and its text, an absent value and a null
    /// one, an empty list and none, nesting moved by one level, the same
    /// members under other keys. Every pair must differ.
    #[test]
    fn values_a_looser_encoding_would_confuse_differ() {
        let values = [
            json!(["ab", "c"]),
            json!(["a", "bc"]),
            json!(["abc"]),
            json!([["a"], "bc"]),
            json!([["a", "bc"]]),
            json!({"a": "bc"}),
            json!({"ab": "c"}),
            json!({"a": {"b": "c"}}),
            json!({"a": null}),
            json!({"a": []}),
            json!({"a": {}}),
            json!({}),
            json!([]),
            json!([null]),
            json!(1),
            json!(-1),
            json!(1.0),
            json!("1"),
            json!(true),
            json!("true"),
            json!(null),
            json!(""),
            json!([""]),
            json!({"": ""}),
            json!("x".repeat(200)),
            json!("x".repeat(201)),
        ];
        let encoded: Vec<Vec<u8>> = values.iter().map(bytes).collect();
        for (i, a) in encoded.iter().enumerate() {
            for (j, b) in encoded.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "{} and {} encode alike", values[i], values[j]);
            }
        }
    }

    #[derive(serde::Serialize)]
    struct Fields {
        #[serde(skip_serializing_if = "Option::is_none")]
        a: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        b: Option<String>,
    }

    #[test]
    fn a_skipped_field_cannot_pass_for_another() {
        let only_a = Fields { a: Some("x".into()), b: None };
        let only_b = Fields { a: None, b: Some("x".into()) };
        assert_ne!(bytes(&only_a), bytes(&only_b));
    }

    #[test]
    fn lengths_past_one_byte_are_written_whole() {
        // 128 and 16,384 bytes need a second and a third length byte.
        for n in [127, 128, 16_383, 16_384] {
            let text = "y".repeat(n);
            let out = bytes(&text);
            let header = out.len() - n;
            assert_eq!(&out[header..], text.as_bytes(), "{n}");
            assert_eq!(header, 1 + if n < 128 { 1 } else if n < 16_384 { 2 } else { 3 }, "{n}");
        }
        assert_ne!(bytes(&"y".repeat(128)), bytes(&vec!["y".repeat(127), "y".to_owned()]));
    }

    #[test]
    fn equal_maps_encode_alike_whatever_their_insertion_order() {
        let a: BTreeMap<&str, u32> = [("b", 2), ("a", 1)].into_iter().collect();
        let b: BTreeMap<&str, u32> = [("a", 1), ("b", 2)].into_iter().collect();
        assert_eq!(bytes(&a), bytes(&b));
        let parsed: serde_json::Value = serde_json::from_str(r#"{"b": 2, "a": 1}"#).unwrap_or_default();
        let other: serde_json::Value = serde_json::from_str(r#"{"a": 1, "b": 2}"#).unwrap_or_default();
        assert_eq!(bytes(&parsed), bytes(&other));
    }
}
