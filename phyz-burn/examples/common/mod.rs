//! What the controller-learning examples share: the model files, seeded random numbers, the
//! `f64` autodiff device, and the learning-curve plot.
#![allow(dead_code)]

use std::path::Path;

use burn::module::Module;
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::tensor::{DType, Device, Tensor, TensorData};
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// DejaVu Sans (Bitstream Vera license, assets/fonts/LICENSE), so labels render on a machine
/// without fonts.
const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

pub fn gymnasium(name: &str) -> Result<phyz_core::Model<f64>, Box<dyn std::error::Error>> {
    let path = format!("{}/../../shared/models/gymnasium/{name}.xml", env!("CARGO_MANIFEST_DIR"));
    Ok(phyz_core::mjcf::load(path)?)
}

/// The CPU device with autodiff, in `f64`.
pub fn device() -> Result<Device, phyz_burn::BurnError> {
    Ok(phyz_burn::f64_device(Device::flex())?.autodiff())
}

/// A policy: two hidden layers of 64 `tanh` units, controls in [-1, 1] out.
#[derive(Module, Debug)]
pub struct Mlp {
    input: Linear,
    hidden: Linear,
    output: Linear,
}

impl Mlp {
    pub fn new(inputs: usize, outputs: usize, device: &Device) -> Self {
        Mlp {
            input: LinearConfig::new(inputs, 64).init(device),
            hidden: LinearConfig::new(64, 64).init(device),
            // Small at first: a policy starting near zero control does not fling the body
            // around before it has learned anything (reacher's motors have a gear of 200).
            output: LinearConfig::new(64, outputs)
                .with_initializer(Initializer::Uniform { min: -0.01, max: 0.01 })
                .init(device),
        }
    }

    pub fn forward(&self, observation: Tensor<2>) -> Tensor<2> {
        let x = self.input.forward(observation).tanh();
        let x = self.hidden.forward(x).tanh();
        self.output.forward(x).tanh()
    }
}

/// The value after `name` on the command line, or `default`.
pub fn argument(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A small seeded generator (xorshift): uniform numbers in [0, 1).
pub struct Rng(pub u64);

impl Rng {
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[-scale, scale)`.
    pub fn symmetric(&mut self, scale: f64) -> f64 {
        scale * (2.0 * self.uniform() - 1.0)
    }
}

/// A `[rows, cols]` tensor of `values`, row by row, in `f64`.
pub fn tensor(values: Vec<f64>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values, [rows, cols]), (device, DType::F64))
}

pub fn values(t: &Tensor<2>) -> Vec<f64> {
    t.to_data().try_to_vec::<f64>().unwrap_or_default()
}

/// A curve to plot: its name, colour and points.
pub struct Curve<'a> {
    pub label: &'a str,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
}

/// Writes the learning curves to `path` (PNG).
pub fn plot(path: &Path, title: &str, x: &str, y: &str, curves: &[Curve]) -> Result<(), Box<dyn std::error::Error>> {
    register_font("sans-serif", FontStyle::Normal, FONT).map_err(|_| "the bundled font is unreadable")?;
    let root = BitMapBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let all = || curves.iter().flat_map(|c| c.points.iter());
    let (x0, x1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (y0, y1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let pad = ((y1 - y0) * 0.05).max(1e-9);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1.max(x0 + 1.0), (y0 - pad)..(y1 + pad))?;
    chart.configure_mesh().x_desc(x).y_desc(y).draw()?;
    for curve in curves {
        let color = curve.color;
        chart
            .draw_series(LineSeries::new(curve.points.iter().copied(), color.stroke_width(2)))?
            .label(curve.label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}
