//! The plot BENCHMARKS.md shows: engine check latency (p50 and p99)
//! against corpus size, with the targets, as a PNG.

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// Where the font comes from (Debian's fonts-dejavu-core, installed by
/// `cargo xtask setup`).
pub const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// One corpus size: (rules, p50 µs, p99 µs).
pub type Point = (usize, f64, f64);

/// Draws the plot to `path` (800×480).
pub fn check_latency(path: &Path, points: &[Point]) -> anyhow::Result<()> {
    let font = std::fs::read(FONT)
        .with_context(|| format!("{FONT} (cargo xtask setup installs fonts-dejavu-core)"))?;
    // The font must live as long as the process (plotters keeps a reference).
    let font: &'static [u8] = Box::leak(font.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, font)
        .map_err(|_| anyhow::anyhow!("{FONT}: not a usable font"))?;
    anyhow::ensure!(!points.is_empty(), "nothing to plot");
    let x_max = points.iter().map(|p| p.0).max().unwrap_or(1) as f64 * 2.0;
    let x_min = points.iter().map(|p| p.0).min().unwrap_or(1) as f64 / 2.0;
    let y_max = points.iter().map(|p| p.2).fold(5000.0, f64::max) * 1.5;
    let root = BitMapBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(draw)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Engine check latency against registry size", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((x_min..x_max).log_scale(), (10.0..y_max).log_scale())
        .map_err(draw)?;
    chart
        .configure_mesh()
        .x_desc("rules in the registry (bundled + synthetic)")
        .y_desc("check latency, µs")
        .x_label_formatter(&|x| format!("{:.0}", x))
        .y_label_formatter(&|y| format!("{:.0}", y))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(draw)?;
    let series = [
        ("p50", BLUE, points.iter().map(|p| (p.0 as f64, p.1)).collect::<Vec<_>>()),
        ("p99", RED, points.iter().map(|p| (p.0 as f64, p.2)).collect::<Vec<_>>()),
    ];
    for (name, colour, data) in series {
        chart
            .draw_series(LineSeries::new(data.clone(), colour.stroke_width(2)))
            .map_err(draw)?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart
            .draw_series(data.iter().map(|&(x, y)| Circle::new((x, y), 4, colour.filled())))
            .map_err(draw)?;
    }
    for (name, target, colour) in
        [("target p50 1 ms", 1000.0, BLUE.mix(0.4)), ("target p99 5 ms", 5000.0, RED.mix(0.4))]
    {
        chart
            .draw_series(LineSeries::new(
                vec![(x_min, target), (x_max, target)],
                colour.stroke_width(1),
            ))
            .map_err(draw)?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(1))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(draw)?;
    root.present().map_err(draw)?;
    Ok(())
}

fn draw<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing the plot: {e:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plot_is_a_png() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("plot.png");
        check_latency(
            &path,
            &[(1_033, 120.0, 900.0), (10_033, 300.0, 2_000.0), (100_033, 700.0, 6_000.0)],
        )
        .expect("drawn");
        let bytes = std::fs::read(&path).expect("written");
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        assert!(check_latency(&path, &[]).is_err());
    }
}
