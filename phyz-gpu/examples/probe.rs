use burn::backend::ops::{FloatTensorOps, IntTensorOps};
use burn::backend::{DispatchDevice, read_sync};
use burn::tensor::TensorData;
use burn_cubecl::CubeBackend;
use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;
use std::time::Instant;

#[cube(launch_unchecked)]
fn exit_early(flags: &Tensor<u32>, data: &mut Tensor<f32>, worlds: u32) {
    let w = ABSOLUTE_POS;
    if w >= worlds as usize {
        terminate!();
    }
    if flags[w] == 0 {
        terminate!();
    }
    data[w] = data[w] * 1.0001f32;
}

#[cube(launch_unchecked)]
fn heavy_if(flags: &Tensor<u32>, data: &mut Tensor<f32>, worlds: u32) {
    let w = ABSOLUTE_POS;
    if w >= worlds as usize {
        terminate!();
    }
    if flags[w] == 0 {
        terminate!();
    }
    let mut a = data[w];
    let mut b = data[w + 1];
    #[unroll]
    for _k in 0..2000u32 {
        a = a * b + 0.5f32;
        b = b * a - 0.25f32;
    }
    data[w] = a + b;
}

#[cube(launch_unchecked)]
fn heavy_loop(flags: &Tensor<u32>, data: &mut Tensor<f32>, worlds: u32) {
    let w = ABSOLUTE_POS;
    if w >= worlds as usize {
        terminate!();
    }
    let go = flags[w];
    for _once in 0..go {
        let mut a = data[w];
        let mut b = data[w + 1];
        #[unroll]
        for _k in 0..2000u32 {
            a = a * b + 0.5f32;
            b = b * a - 0.25f32;
        }
        data[w] = a + b;
    }
}

#[cube(launch_unchecked)]
fn schedule(counts: &mut Tensor<u32>, cubes: u32) {
    if ABSOLUTE_POS == 0 {
        counts[0] = cubes;
        counts[1] = 1;
        counts[2] = 1;
    }
}

fn main() {
    let device = if std::env::args().nth(1).as_deref() == Some("wgpu") {
        phyz_gpu::device::wgpu()
    } else {
        phyz_gpu::device::opengl()
    };
    let inner = device.clone().inner();
    let DispatchDevice::Cube(cube) = inner.as_dispatch() else { panic!() };
    let client = cube.client();
    let worlds = 4096usize;
    let flags = CubeBackend::int_from_data(TensorData::new(vec![0u32; worlds], [worlds]), cube);
    let counts = client
        .memory_dedicated_allocation((), |_| CubeBackend::int_from_data(TensorData::new(vec![0u32; 4], [4]), cube));
    let data = CubeBackend::float_from_data(TensorData::new(vec![1.0f32; worlds + 1], [worlds + 1]), cube);
    let fresh = std::env::args().any(|a| a == "fresh");
    let dim = CubeDim::new(&client, worlds);
    let count = burn_cubecl::cubecl::calculate_cube_count_elemwise(&client, worlds, dim);
    println!("dim {dim:?} count {count:?}");
    const N: usize = 300;
    let ones = CubeBackend::int_from_data(TensorData::new(vec![1u32; worlds + 1], [worlds + 1]), cube);
    for name in if fresh { vec!["if0"] } else { vec![] } {
        read_sync(client.sync()).unwrap();
        let clock = Instant::now();
        for _ in 0..20 {
            unsafe {
                let f = if name.ends_with('0') { flags.clone() } else { ones.clone() }.into_tensor_arg();
                let d = data.clone().into_tensor_arg();
                if name.starts_with("if") {
                    heavy_if::launch_unchecked(&client, count.clone(), dim, f, d, worlds as u32)
                } else {
                    heavy_loop::launch_unchecked(&client, count.clone(), dim, f, d, worlds as u32)
                }
            }
        }
        read_sync(client.sync()).unwrap();
        println!("{name:>8}: {:.1} us per launch", clock.elapsed().as_secs_f64() * 1e6 / 20.0);
    }
    for name in ["static", "dynamic0", "dynamic_sched", "static", "dynamic0", "dynamic_sched", "dyn_full"] {
        read_sync(client.sync()).unwrap();
        let clock = Instant::now();
        for _ in 0..N {
            unsafe {
                let (f, d) = (
                    if name == "dyn_full" { ones.clone() } else { flags.clone() }.into_tensor_arg(),
                    data.clone().into_tensor_arg(),
                );
                match name {
                    "static" => exit_early::launch_unchecked(&client, count.clone(), dim, f, d, worlds as u32),
                    "dynamic0" => exit_early::launch_unchecked(
                        &client,
                        CubeCount::Dynamic(counts.handle.clone().binding()),
                        dim,
                        f,
                        d,
                        worlds as u32,
                    ),
                    _ => {
                        let c = if name == "dyn_full" { 4 } else { 0 };
                        schedule::launch_unchecked(
                            &client,
                            CubeCount::Static(1, 1, 1),
                            CubeDim::new_1d(1),
                            counts.clone().into_tensor_arg(),
                            c,
                        );
                        exit_early::launch_unchecked(
                            &client,
                            CubeCount::Dynamic(counts.handle.clone().binding()),
                            dim,
                            f,
                            d,
                            worlds as u32,
                        )
                    }
                }
            }
        }
        let enq = clock.elapsed().as_secs_f64();
        read_sync(client.sync()).unwrap();
        let s = clock.elapsed().as_secs_f64();
        println!("{name:>14}: {:.1} us per launch ({:.1} enqueue)", s * 1e6 / N as f64, enq * 1e6 / N as f64);
        if name == "dyn_full" {
            let d = read_sync(CubeBackend::float_into_data(data.clone())).unwrap();
            println!(
                "data after {} launches (expect {}): {:?}",
                N,
                1.0001f32.powi(N as i32),
                &d.as_slice::<f32>().unwrap()[..2]
            );
        }
    }
}
