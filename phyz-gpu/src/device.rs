//! The devices the GPU pass runs on, and the float type each gives it.

use burn::backend::DispatchDevice;
use burn::tensor::wgpu::WgpuBackend;
use burn::tensor::{DType, Device, DeviceKind};
use burn_cubecl::cubecl::MemoryScope;
use burn_cubecl::cubecl::wgpu::WgpuDevice;

/// wgpu on the graphics API the machine prefers: Vulkan where it has it (a GPU's driver, or
/// Mesa's lavapipe), which is where `f64` lives (SPIR-V with `shaderFloat64`).
pub fn wgpu() -> Device {
    Device::wgpu(DeviceKind::DefaultDevice)
}

/// wgpu on OpenGL (Mesa's llvmpipe on a machine without a GPU): `f32` only. burn's reductions
/// run there where Mesa 22.3's lavapipe crashes compiling them (`docs/gpu.md`).
pub fn opengl() -> Device {
    Device::new(WgpuDevice::default().on(WgpuBackend::Gl))
}

/// The float type the physics gets on `device`: `f64` where the device computes it, else `f32`
/// (wgpu has `f64` only on Vulkan with `shaderFloat64`) — with the reason, for the caller to say.
pub fn float_dtype(device: &Device) -> (DType, &'static str) {
    if device.supports_dtype(DType::F64) {
        (DType::F64, "the device computes f64")
    } else {
        (DType::F32, "the device has no f64 (wgpu has it only on Vulkan with shaderFloat64): f32")
    }
}

/// The unit roundoff of a float type: what places a swept impulse in its zone (`pgs::zone`).
pub fn epsilon(dtype: DType) -> f64 {
    if dtype == DType::F64 { f64::EPSILON } else { f32::EPSILON as f64 }
}

/// The bytes `device`'s memory pools hold reserved, where it is a CubeCL device: pools keep the
/// pages they took, so after a run this is its high-water mark of reserved memory (released
/// only by a cleanup the run did not ask for).
pub fn memory_reserved(device: &Device) -> Option<u64> {
    let inner = device.clone().inner();
    let DispatchDevice::Cube(cube) = inner.as_dispatch() else {
        return None;
    };
    Some(cube.client().memory_report(MemoryScope::Device).usage().bytes_reserved)
}
