//! Tensors to host numbers and back: the boundary where the physics leaves burn for `f64`.

use burn::tensor::{DType, Device, Tensor, TensorData};

use crate::BurnError;

/// The numbers of a `[rows, cols]` tensor, row by row, checked to be `f64` and finite.
pub(crate) fn read(tensor: &Tensor<2>, what: &'static str, rows: usize, cols: usize) -> Result<Vec<f64>, BurnError> {
    read_as(tensor, what, rows, cols, DType::F64)
}

/// [`read`] of a tensor that must hold `dtype` (its numbers come back in `f64`).
pub(crate) fn read_as(
    tensor: &Tensor<2>,
    what: &'static str,
    rows: usize,
    cols: usize,
    dtype: DType,
) -> Result<Vec<f64>, BurnError> {
    let dims = tensor.dims();
    if dims != [rows, cols] {
        return Err(BurnError::Shape { what, expected: vec![rows, cols], got: dims.to_vec() });
    }
    let got = tensor.dtype();
    if got != dtype {
        return Err(BurnError::DType { what, got });
    }
    let data = tensor.to_data().convert::<f64>();
    let values: Vec<f64> = data.try_to_vec::<f64>().map_err(|_| BurnError::DType { what, got })?;
    match values.iter().position(|x| !x.is_finite()) {
        Some(at) if cols > 0 => Err(BurnError::NonFinite { what, lane: at / cols, index: at % cols }),
        _ => Ok(values),
    }
}

/// A `[rows, cols]` tensor of `values` (row by row) on `device`, in `f64`.
pub(crate) fn write(values: Vec<f64>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    write_as(values, rows, cols, device, DType::F64)
}

/// [`write`] in float type `dtype`.
pub(crate) fn write_as(values: Vec<f64>, rows: usize, cols: usize, device: &Device, dtype: DType) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values, [rows, cols]).convert_dtype(dtype), (device, dtype))
}
