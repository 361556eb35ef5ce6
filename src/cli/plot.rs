//! PNG plots of an optimization: the loss per iteration and the trajectory before and after.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use super::CliError;

/// DejaVu Sans (Bitstream Vera license, assets/fonts/LICENSE), bundled so that labels render on
/// a machine without fonts.
const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// A path drawn in a panel.
pub struct Series<'a> {
    label: &'static str,
    path: &'a [[f64; 3]],
    color: RGBColor,
}

impl<'a> Series<'a> {
    /// The first guess's path, in grey.
    pub fn before(path: &'a [[f64; 3]]) -> Self {
        Series { label: "first guess", path, color: RGBColor(150, 150, 150) }
    }

    /// The optimized path, in blue.
    pub fn after(path: &'a [[f64; 3]]) -> Self {
        Series { label: "optimized", path, color: RGBColor(30, 90, 200) }
    }
}

/// Paths projected on two world axes (0, 1, 2: x, y, z).
pub struct Panel<'a> {
    pub title: &'static str,
    pub axes: (usize, usize),
    pub series: Vec<Series<'a>>,
}

const AXIS_NAMES: [&str; 3] = ["x (m)", "y (m)", "z (m)"];

/// The range of `values` with a margin, never empty.
fn padded(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = ((hi - lo) * 0.08).max(0.05);
    (lo - pad)..(hi + pad)
}

/// Writes `path`: the loss curve (log scale), then each panel with the target marked.
pub fn plot_throw(path: &Path, losses: &[f64], panels: &[Panel], target: [f64; 3]) -> Result<(), CliError> {
    // Registering twice replaces the font with itself; an error only means the bytes are bad.
    register_font("sans-serif", FontStyle::Normal, FONT).map_err(|_| "the bundled font is unreadable")?;
    let root = BitMapBackend::new(path, (600 * (1 + panels.len() as u32), 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((1, 1 + panels.len()));

    let positive = losses.iter().copied().filter(|l| *l > 0.0);
    let lo = positive.clone().fold(f64::INFINITY, f64::min);
    let hi = positive.fold(0.0, f64::max);
    let (lo, hi) = if lo.is_finite() && hi > 0.0 { (lo * 0.5, hi * 2.0) } else { (1e-12, 1.0) };
    let mut chart = ChartBuilder::on(&areas[0])
        .caption("loss per iteration", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..(losses.len().max(2) - 1) as f64, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc("½ |miss|² (m²)")
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()?;
    chart.draw_series(LineSeries::new(
        losses.iter().enumerate().filter(|(_, l)| **l > 0.0).map(|(i, l)| (i as f64, *l)),
        RGBColor(30, 90, 200).stroke_width(2),
    ))?;

    for (panel, area) in panels.iter().zip(&areas[1..]) {
        let (a, b) = panel.axes;
        let points = || panel.series.iter().flat_map(|s| s.path.iter()).chain(std::iter::once(&target));
        let mut chart = ChartBuilder::on(area)
            .caption(panel.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(padded(points().map(|p| p[a])), padded(points().map(|p| p[b])))?;
        chart.configure_mesh().x_desc(AXIS_NAMES[a]).y_desc(AXIS_NAMES[b]).draw()?;
        for series in &panel.series {
            let color = series.color;
            chart
                .draw_series(LineSeries::new(series.path.iter().map(|p| (p[a], p[b])), color.stroke_width(2)))?
                .label(series.label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart
            .draw_series(std::iter::once(Cross::new((target[a], target[b]), 8, RED.stroke_width(3))))?
            .label("target")
            .legend(|(x, y)| Cross::new((x + 10, y), 6, RED.stroke_width(2)));
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
