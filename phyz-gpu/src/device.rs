//! The devices the GPU pass runs on, and the float type each gives it.

use burn::backend::DispatchDevice;
use burn::tensor::wgpu::WgpuBackend;
use burn::tensor::{DType, Device, DeviceKind};
use burn_cubecl::cubecl::wgpu::WgpuDevice;
use burn_cubecl::cubecl::{MemoryPoolKind, MemoryPoolReport, MemoryPoolsReport, MemoryScope};

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

/// Whether `device` is a CubeCL device that is no card: a software driver (Mesa's llvmpipe or
/// lavapipe) or a CPU.
pub fn is_software(device: &Device) -> bool {
    let inner = device.clone().inner();
    match inner.as_dispatch() {
        DispatchDevice::Cube(cube) => cube.client().properties().identity.physical.is_none(),
        _ => false,
    }
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

/// The most device memory `device`'s pools have held reserved, in bytes, where it is a CubeCL
/// device: a sliced pool's peak count of pages times their size, an exclusive pool's peak count
/// times its largest allocation (a bound from above), and what the pools that keep their
/// allocations (direct, persistent, dedicated) hold now.
pub fn memory_peak(device: &Device) -> Option<u64> {
    let inner = device.clone().inner();
    let DispatchDevice::Cube(cube) = inner.as_dispatch() else {
        return None;
    };
    let report = cube.client().memory_report(MemoryScope::Device);
    let pool_peak = |pool: &MemoryPoolReport| match pool.kind {
        MemoryPoolKind::Sliced { page_size, .. } | MemoryPoolKind::Adaptive { page_size, .. } => {
            pool.pages_peak * page_size
        }
        MemoryPoolKind::Exclusive { max_alloc_size } => pool.pages_peak * max_alloc_size,
        MemoryPoolKind::Direct | MemoryPoolKind::Persistent => pool.usage.bytes_reserved,
    };
    let stream = |pools: &MemoryPoolsReport| {
        pools.dynamic.iter().chain([&pools.persistent, &pools.dedicated]).map(pool_peak).sum::<u64>()
    };
    Some(
        report
            .streams
            .iter()
            .map(|s| stream(&s.pools) + s.auxiliary.iter().map(|a| stream(&a.pools)).sum::<u64>())
            .sum(),
    )
}
