//! Order statistics of timing samples.

use std::time::Duration;

/// Percentiles of a set of samples, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// How many samples.
    pub n: usize,
    /// The median.
    pub p50: f64,
    /// The 99th percentile (nearest rank).
    pub p99: f64,
    /// The mean.
    pub mean: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

/// The `q`-quantile (0..=1) of sorted values, by nearest rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of values (any order).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    quantile(&v, 0.5)
}

impl Summary {
    /// Summarises durations.
    pub fn of(samples: &[Duration]) -> Summary {
        Summary::of_us(&samples.iter().map(|d| d.as_secs_f64() * 1e6).collect::<Vec<_>>())
    }

    /// Summarises values already in microseconds.
    pub fn of_us(values: &[f64]) -> Summary {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let mean = if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
        Summary {
            n: v.len(),
            p50: quantile(&v, 0.5),
            p99: quantile(&v, 0.99),
            mean,
            min: v.first().copied().unwrap_or(f64::NAN),
            max: v.last().copied().unwrap_or(f64::NAN),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    }

    #[test]
    fn a_summary_of_durations_is_in_microseconds() {
        let s = Summary::of(&[
            Duration::from_micros(10),
            Duration::from_micros(30),
            Duration::from_micros(20),
        ]);
        assert_eq!((s.n, s.p50, s.min, s.max), (3, 20.0, 10.0, 30.0));
        assert!((s.mean - 20.0).abs() < 1e-9);
    }
}
