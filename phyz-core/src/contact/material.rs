//! Contact materials: friction, restitution, MuJoCo's `solref`/`solimp`, the margin taper, and
//! how the two materials of a touching pair combine.

/// MuJoCo's smallest and largest impedance.
pub const MIN_IMPEDANCE: f64 = 1e-4;
pub const MAX_IMPEDANCE: f64 = 0.9999;
/// Below this a `solmix` counts as zero (MuJoCo's `mjMINVAL`).
const MIN_SOLMIX: f64 = 1e-15;

/// The reference response of a constraint (MuJoCo `solref`): either a time constant and damping
/// ratio of the mass-spring-damper the constraint violation follows, or directly a stiffness
/// and damping (MuJoCo's negative form `(-stiffness, -damping)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SolRef {
    TimeConstant { timeconst: f64, dampratio: f64 },
    Direct { stiffness: f64, damping: f64 },
}

impl Default for SolRef {
    fn default() -> Self {
        SolRef::TimeConstant { timeconst: 0.02, dampratio: 1.0 }
    }
}

impl SolRef {
    /// From MJCF's two numbers: positive means `(timeconst, dampratio)`, negative
    /// `(-stiffness, -damping)`.
    /// Numbers of mixed sign are MuJoCo's default, as MuJoCo replaces them.
    pub fn from_mjcf([a, b]: [f64; 2]) -> Self {
        if (a > 0.0) != (b > 0.0) {
            SolRef::default()
        } else if a > 0.0 {
            SolRef::TimeConstant { timeconst: a, dampratio: b }
        } else {
            SolRef::Direct { stiffness: -a, damping: -b }
        }
    }

    /// The two MJCF numbers this came from.
    pub fn to_mjcf(&self) -> [f64; 2] {
        match *self {
            SolRef::TimeConstant { timeconst, dampratio } => [timeconst, dampratio],
            SolRef::Direct { stiffness, damping } => [-stiffness, -damping],
        }
    }

    /// MuJoCo's `(K, B)` of the reference acceleration `a_ref = -B v - K d r`, for impedance
    /// ceiling `dmax` and step `dt` (the time constant is kept at least `2 dt`, MuJoCo's
    /// `refsafe`, so the reference dynamics stay resolvable by the integrator).
    pub fn stiffness_damping(&self, dmax: f64, dt: f64) -> (f64, f64) {
        match *self {
            SolRef::TimeConstant { timeconst, dampratio } => {
                let tc = timeconst.max(2.0 * dt);
                (1.0 / (dmax * dmax * tc * tc * dampratio * dampratio), 2.0 / (dmax * tc))
            }
            SolRef::Direct { stiffness, damping } => (stiffness / (dmax * dmax), damping / dmax),
        }
    }
}

/// Depth-dependent impedance (MuJoCo `solimp`): `d` rises from `dmin` at the surface to `dmax`
/// at `width` deep along a sigmoid with the given `midpoint` and `power`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolImp {
    pub dmin: f64,
    pub dmax: f64,
    pub width: f64,
    pub midpoint: f64,
    pub power: f64,
}

impl Default for SolImp {
    fn default() -> Self {
        SolImp { dmin: 0.9, dmax: 0.95, width: 0.001, midpoint: 0.5, power: 2.0 }
    }
}

impl SolImp {
    /// MJCF's five numbers, held to the ranges MuJoCo enforces before using them
    /// ([`SolImp::clamped`]).
    pub fn from_mjcf(numbers: [f64; 5]) -> Self {
        Self::raw(numbers).clamped()
    }

    /// MJCF's five numbers as written: a geom's, which MuJoCo mixes with its partner's before
    /// holding the mix to its ranges.
    pub fn raw([dmin, dmax, width, midpoint, power]: [f64; 5]) -> Self {
        SolImp { dmin, dmax, width, midpoint, power }
    }

    /// Held to MuJoCo's ranges: `dmin`, `dmax` and `midpoint` in
    /// `[MIN_IMPEDANCE, MAX_IMPEDANCE]`, `width ≥ 0`, `power ≥ 1`.
    pub fn clamped(self) -> Self {
        let impedance = |d: f64| d.clamp(MIN_IMPEDANCE, MAX_IMPEDANCE);
        SolImp {
            dmin: impedance(self.dmin),
            dmax: impedance(self.dmax),
            width: self.width.max(0.0),
            midpoint: impedance(self.midpoint),
            power: self.power.max(1.0),
        }
    }

    /// Impedance and its derivative with respect to the violation `r ≥ 0` (MuJoCo's
    /// `getimpedance`, clamped to `[MIN_IMPEDANCE, MAX_IMPEDANCE]`).
    pub fn impedance(&self, r: f64) -> (f64, f64) {
        let clamp = |d: f64| d.clamp(MIN_IMPEDANCE, MAX_IMPEDANCE);
        let SolImp { dmin, dmax, width, midpoint, power } = *self;
        if dmin == dmax || width <= 1e-15 {
            return (clamp(0.5 * (dmin + dmax)), 0.0);
        }
        let x = r.abs() / width;
        if x >= 1.0 || x <= 0.0 {
            return (clamp(if x >= 1.0 { dmax } else { dmin }), 0.0);
        }
        let (y, slope) = if power == 1.0 {
            (x, 1.0)
        } else if x <= midpoint {
            let a = 1.0 / midpoint.powf(power - 1.0);
            (a * x.powf(power), power * a * x.powf(power - 1.0))
        } else {
            let b = 1.0 / (1.0 - midpoint).powf(power - 1.0);
            (1.0 - b * (1.0 - x).powf(power), power * b * (1.0 - x).powf(power - 1.0))
        };
        let d = dmin + y * (dmax - dmin);
        let inside = (MIN_IMPEDANCE..=MAX_IMPEDANCE).contains(&d);
        (clamp(d), if inside { slope * r.signum() * (dmax - dmin) / width } else { 0.0 })
    }
}

/// The surface properties of one side of a contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Coulomb friction coefficient.
    pub friction: f64,
    /// Torsional and rolling friction (MuJoCo's second and third `friction` numbers, lengths):
    /// the moment about the normal, and about the tangents, per unit normal force that a
    /// contact of condim 4, and 6, resists turning with.
    pub torsion: f64,
    pub rolling: f64,
    /// Coefficient of restitution: the separating normal speed is `restitution` times the
    /// approach speed (ramped to zero at low speed so resting contact does not bounce).
    pub restitution: f64,
    pub solref: SolRef,
    pub solimp: SolImp,
    /// The band above the surface in which a contact is already generated; its impedance
    /// tapers to zero across the band.
    pub margin: f64,
    /// MuJoCo's pairing weights: a surface of higher `priority` alone sets the pair's friction,
    /// solref and solimp; at equal priority solref and solimp mix in proportion to `solmix`.
    pub priority: i32,
    pub solmix: f64,
}

impl Default for Material {
    /// MuJoCo's defaults: friction 1, no restitution, default solref/solimp, margin one
    /// solimp width (so the impedance is one C¹ curve across `[-margin, width]`).
    fn default() -> Self {
        let solimp = SolImp::default();
        Material {
            friction: 1.0,
            torsion: 0.005,
            rolling: 0.0001,
            restitution: 0.0,
            solref: SolRef::default(),
            solimp,
            margin: solimp.width,
            priority: 0,
            solmix: 1.0,
        }
    }
}

/// MuJoCo's rule for a pair's friction coefficient (each of the three): the surface of higher
/// priority's, else the larger. Generic so that the step applies it to live coefficients.
pub fn pair_friction<T: Copy>(priorities: [i32; 2], values: [T; 2], larger: impl Fn(T, T) -> T) -> T {
    match priorities[0].cmp(&priorities[1]) {
        std::cmp::Ordering::Greater => values[0],
        std::cmp::Ordering::Less => values[1],
        std::cmp::Ordering::Equal => larger(values[0], values[1]),
    }
}

/// `3t² − 2t³`: the C¹ ramp from 0 at `t ≤ 0` to 1 at `t ≥ 1`, and its derivative.
pub(crate) fn smoothstep(t: f64) -> (f64, f64) {
    let t = t.clamp(0.0, 1.0);
    (t * t * (3.0 - 2.0 * t), 6.0 * t * (1.0 - t))
}

impl Material {
    /// Rubber on a hard surface: high friction, soft, a little bounce.
    pub fn rubber() -> Self {
        Material {
            friction: 1.2,
            restitution: 0.3,
            solref: SolRef::TimeConstant { timeconst: 0.03, dampratio: 0.8 },
            ..Material::default()
        }
    }

    /// Steel on steel: moderate friction, stiff.
    pub fn steel() -> Self {
        Material {
            friction: 0.5,
            restitution: 0.6,
            solref: SolRef::TimeConstant { timeconst: 0.005, dampratio: 1.0 },
            ..Material::default()
        }
    }

    /// Ice: almost frictionless.
    pub fn ice() -> Self {
        Material { friction: 0.05, ..Material::default() }
    }

    /// A ball that bounces.
    pub fn bouncy() -> Self {
        Material { friction: 0.8, restitution: 0.9, ..Material::default() }
    }

    /// Impedance at signed penetration `depth` (negative: separated by `-depth`): solimp's
    /// curve when penetrating; inside the margin band `dmin` scaled by a smoothstep that
    /// reaches zero at `depth = -margin`. C¹ at the surface (both branches have zero slope
    /// there for `power > 1`).
    pub fn impedance_at(&self, depth: f64) -> f64 {
        self.impedance_and_slope(depth).0
    }

    /// `d(impedance)/d(depth)` of [`Material::impedance_at`], exact on both branches.
    pub fn dimpedance_ddepth(&self, depth: f64) -> f64 {
        self.impedance_and_slope(depth).1
    }

    fn impedance_and_slope(&self, depth: f64) -> (f64, f64) {
        if depth >= 0.0 {
            return self.solimp.impedance(depth);
        }
        let (dmin, _) = self.solimp.impedance(0.0);
        if self.margin <= 0.0 {
            return (0.0, 0.0);
        }
        let (s, ds) = smoothstep((depth + self.margin) / self.margin);
        (dmin * s, dmin * ds / self.margin)
    }

    /// The material a contact between `a` and `b` is solved with, by MuJoCo's rule
    /// (`mj_contactParam`): the surface of higher priority sets friction, solref and solimp;
    /// at equal priority each friction coefficient is the larger, solimp mixes with weight
    /// `solmix_a / (solmix_a + solmix_b)`, and solref mixes the same way in the time-constant
    /// form or takes each number's minimum in the direct form. Margins (each already less its
    /// gap) add, as MuJoCo adds the geoms' margins and gaps; restitution (phyz's own) is the
    /// larger.
    pub fn combine(a: &Material, b: &Material) -> Material {
        let shared = Material {
            restitution: a.restitution.max(b.restitution),
            margin: a.margin + b.margin,
            priority: a.priority.max(b.priority),
            ..*a
        };
        let priorities = [a.priority, b.priority];
        let friction = |get: fn(&Material) -> f64| pair_friction(priorities, [get(a), get(b)], f64::max);
        let (friction, torsion, rolling) = (friction(|m| m.friction), friction(|m| m.torsion), friction(|m| m.rolling));
        if a.priority != b.priority {
            let high = if a.priority > b.priority { a } else { b };
            return Material { friction, torsion, rolling, solref: high.solref, solimp: high.solimp, ..shared };
        }
        let w = match (a.solmix >= MIN_SOLMIX, b.solmix >= MIN_SOLMIX) {
            (true, true) => a.solmix / (a.solmix + b.solmix),
            (false, false) => 0.5,
            (false, true) => 0.0,
            (true, false) => 1.0,
        };
        let mix = |x: f64, y: f64| w * x + (1.0 - w) * y;
        let solref = match (a.solref, b.solref) {
            (
                SolRef::TimeConstant { timeconst: t1, dampratio: r1 },
                SolRef::TimeConstant { timeconst: t2, dampratio: r2 },
            ) => SolRef::TimeConstant { timeconst: mix(t1, t2), dampratio: mix(r1, r2) },
            (x, y) => {
                let ([k1, b1], [k2, b2]) = (x.to_mjcf(), y.to_mjcf());
                SolRef::from_mjcf([k1.min(k2), b1.min(b2)])
            }
        };
        let (i, j) = (a.solimp, b.solimp);
        let solimp = SolImp {
            dmin: mix(i.dmin, j.dmin),
            dmax: mix(i.dmax, j.dmax),
            width: mix(i.width, j.width),
            midpoint: mix(i.midpoint, j.midpoint),
            power: mix(i.power, j.power),
        };
        Material { friction, torsion, rolling, solref, solimp, solmix: a.solmix.max(b.solmix), ..shared }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impedance_follows_mujoco_and_its_slope_is_exact() {
        let s = SolImp::default();
        assert_eq!(s.impedance(0.0).0, 0.9);
        assert_eq!(s.impedance(0.002).0, 0.95);
        assert!((s.impedance(0.0005).0 - 0.925).abs() < 1e-15);
        let m = Material::default();
        for depth in [-0.0009, -0.0005, -0.0001, 0.0001, 0.0003, 0.0007, 0.0009] {
            let h = 1e-9;
            let fd = (m.impedance_at(depth + h) - m.impedance_at(depth - h)) / (2.0 * h);
            assert!(
                (fd - m.dimpedance_ddepth(depth)).abs() < 1e-5 * (1.0 + fd.abs()),
                "{depth}: {fd} vs {}",
                m.dimpedance_ddepth(depth)
            );
        }
        // C¹ at the surface and zero at the edge of the margin.
        assert!((m.impedance_at(-1e-12) - m.impedance_at(1e-12)).abs() < 1e-9);
        assert_eq!(m.impedance_at(-m.margin), 0.0);
    }

    #[test]
    fn combine_is_commutative() {
        let (a, b) = (Material::rubber(), Material::ice());
        assert_eq!(Material::combine(&a, &b), Material::combine(&b, &a));
        let c = Material::combine(&a, &b);
        assert_eq!((c.friction, c.restitution), (1.2, 0.3));
        let mixed = Material { solref: SolRef::Direct { stiffness: 1e4, damping: 100.0 }, ..Material::steel() };
        assert_eq!(Material::combine(&mixed, &a), Material::combine(&a, &mixed));
    }
}
