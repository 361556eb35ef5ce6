//! Height fields: a grid of elevations over a rectangle, standing on a base (MuJoCo's
//! `hfield`). Fixed geometry, like a mesh: not a model parameter.

/// A height field in its geom's frame: `nrow × ncol` elevations over `[-x, x] × [-y, y]`
/// (`size = [x, y, z_top, z_base]`), row `r` at `y = -y + 2y r/(nrow − 1)` and column `c` at
/// `x = -x + 2x c/(ncol − 1)`; an elevation `e ∈ [0, 1]` stands at `e · z_top`, and the solid
/// reaches down to `-z_base`.
#[derive(Clone, Debug, PartialEq)]
pub struct HeightField {
    pub nrow: usize,
    pub ncol: usize,
    pub size: [f64; 4],
    /// Row-major elevations, normalized to `[0, 1]` (single precision, as MuJoCo keeps them).
    elevation: Vec<f32>,
}

/// Why elevation data cannot make a height field.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum HeightFieldError {
    #[error("a height field needs at least 2 rows and 2 columns, not {nrow} × {ncol}")]
    TooSmall { nrow: usize, ncol: usize },
    #[error("{given} elevations for {nrow} × {ncol}")]
    WrongCount { given: usize, nrow: usize, ncol: usize },
    #[error("sizes must be positive, not {0:?}")]
    Size([f64; 4]),
    #[error("an elevation is not finite")]
    NonFinite,
}

impl HeightField {
    /// A height field from raw elevations (row-major, first row at `-y`), normalized as MuJoCo
    /// normalizes them: shifted so the lowest is 0, and scaled so the highest is 1 unless all
    /// are (nearly) equal, in single precision.
    pub fn new(nrow: usize, ncol: usize, size: [f64; 4], raw: &[f32]) -> Result<Self, HeightFieldError> {
        if nrow < 2 || ncol < 2 {
            return Err(HeightFieldError::TooSmall { nrow, ncol });
        }
        if Some(raw.len()) != nrow.checked_mul(ncol) {
            return Err(HeightFieldError::WrongCount { given: raw.len(), nrow, ncol });
        }
        if size.iter().any(|s| !(*s > 0.0 && s.is_finite())) {
            return Err(HeightFieldError::Size(size));
        }
        if raw.iter().any(|e| !e.is_finite()) {
            return Err(HeightFieldError::NonFinite);
        }
        let lowest = raw.iter().copied().fold(f32::INFINITY, f32::min);
        let highest = raw.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        // MuJoCo's mjEPS, compared in single precision.
        let spread = highest - lowest;
        let elevation =
            raw.iter().map(|e| if f64::from(spread) > 1e-14 { (e - lowest) / spread } else { e - lowest }).collect();
        Ok(HeightField { nrow, ncol, size, elevation })
    }

    /// The elevation (normalized) at row `r`, column `c`.
    pub fn elevation(&self, r: usize, c: usize) -> f64 {
        f64::from(self.elevation[r * self.ncol + c])
    }

    /// The height of the surface at grid point `(r, c)`, in the geom's frame.
    pub fn height(&self, r: usize, c: usize) -> f64 {
        self.elevation(r, c) * self.size[2]
    }

    /// The grid point `(r, c)`'s position across the field, `(x, y)`.
    pub fn grid_point(&self, r: usize, c: usize) -> (f64, f64) {
        let (dx, dy) = self.spacing();
        (dx * c as f64 - self.size[0], dy * r as f64 - self.size[1])
    }

    /// The grid's spacing, along x (columns) and y (rows).
    pub fn spacing(&self) -> (f64, f64) {
        (2.0 * self.size[0] / (self.ncol - 1) as f64, 2.0 * self.size[1] / (self.nrow - 1) as f64)
    }

    /// Radius of the smallest sphere about the geom's origin holding the field (MuJoCo's
    /// `rbound`).
    pub fn bounding_radius(&self) -> f64 {
        let [x, y, top, base] = self.size;
        (x * x + y * y + top.max(base).powi(2)).sqrt()
    }
}

/// MuJoCo's binary height field format: two 32-bit integers (rows, columns), then the
/// elevations as 32-bit floats, row by row from -y, little-endian.
pub fn binary_elevations(bytes: &[u8]) -> Result<(usize, usize, Vec<f32>), String> {
    let word = |k: usize| bytes.get(4 * k..4 * k + 4).map(|b| [b[0], b[1], b[2], b[3]]);
    let (Some(rows), Some(cols)) = (word(0).map(i32::from_le_bytes), word(1).map(i32::from_le_bytes)) else {
        return Err("hfield missing header".into());
    };
    let (Ok(nrow), Ok(ncol)) = (usize::try_from(rows), usize::try_from(cols)) else {
        return Err("non-positive hfield dimensions".into());
    };
    let count = nrow.checked_mul(ncol).filter(|n| bytes.len().checked_sub(8) == Some(4 * n));
    let Some(count) = count else { return Err("unexpected file size".into()) };
    Ok((nrow, ncol, (0..count).filter_map(|k| word(k + 2).map(f32::from_le_bytes)).collect()))
}

/// A PNG image's elevations as MuJoCo reads them: each pixel's first channel (its grey level,
/// or its red) at 8 bits, the image's bottom row the field's first (at -y).
pub fn png_elevations(bytes: &[u8]) -> Result<(usize, usize, Vec<f32>), String> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let mut buffer = vec![0; reader.output_buffer_size().ok_or("the image is too large")?];
    let info = reader.next_frame(&mut buffer).map_err(|e| e.to_string())?;
    let (width, height, samples) = (info.width as usize, info.height as usize, info.color_type.samples());
    let pixel = |row: usize, column: usize| f32::from(buffer[row * info.line_size + column * samples]);
    let elevations = (0..height).rev().flat_map(|row| (0..width).map(move |column| (row, column)));
    Ok((height, width, elevations.map(|(row, column)| pixel(row, column)).collect()))
}
