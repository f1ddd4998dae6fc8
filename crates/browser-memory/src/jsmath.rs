//! `Math.exp` as V8 computes it, so the trace scores of the compatibility layout print as the
//! reference (Node) prints them.
//!
//! Rust's `f64::exp` calls the platform's libm, which rounds some results one unit in the last
//! place away from V8's (for 1.6046947106481482 days of age, `exp(-age / 14)` is
//! 0.891703990438408 here and 0.8917039904384079 in V8). V8 computes `Math.exp` with its port
//! of fdlibm's `e_exp.c` (`src/base/ieee754.cc`), whose algorithm is public and short:
//! reduce the argument by multiples of ln 2, approximate on the primary range with a rational
//! function whose coefficients are fixed, scale by the power of two. Following it step by step
//! gives V8's bits; a test compares with Node itself on 100,000 inputs when Node is present.

/// fdlibm's constants, by their bits as its source gives them.
///
/// ln 2, split in a high part exact for small multiples and a low correction.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
const INV_LN2: f64 = f64::from_bits(0x3ff7_1547_652b_82fe);
/// The remez coefficients of fdlibm's approximation on [-0.5 ln 2, 0.5 ln 2].
const P1: f64 = f64::from_bits(0x3fc5_5555_5555_553e);
const P2: f64 = f64::from_bits(0xbf66_c16c_16be_bd93);
const P3: f64 = f64::from_bits(0x3f11_566a_af25_de2c);
const P4: f64 = f64::from_bits(0xbebb_bd41_c5d2_6bf1);
const P5: f64 = f64::from_bits(0x3e66_3769_72be_a4d0);
const O_THRESHOLD: f64 = f64::from_bits(0x4086_2e42_fefa_39ef);
const U_THRESHOLD: f64 = f64::from_bits(0xc087_4910_d52d_3051);
const HUGE: f64 = 1.0e+300;
/// 2^-1000.
const TWO_M1000: f64 = f64::from_bits(0x0170_0000_0000_0000);

/// The high 32 bits of `x`'s representation.
fn high_word(x: f64) -> u32 {
    (x.to_bits() >> 32) as u32
}

/// The double whose high word is `high` and whose low word is zero.
fn from_high_word(high: u32) -> f64 {
    f64::from_bits(u64::from(high) << 32)
}

/// e raised to `x`, bit for bit as V8's `Math.exp(x)`.
pub(crate) fn exp(x: f64) -> f64 {
    let hx = high_word(x);
    let negative = hx >> 31 != 0;
    let hx = hx & 0x7fff_ffff;

    // Arguments beyond the finite range: NaN, the infinities, overflow and underflow.
    if hx >= 0x4086_2E42 {
        if hx >= 0x7ff0_0000 {
            if x.is_nan() {
                return x + x;
            }
            return if negative { 0.0 } else { x };
        }
        if x > O_THRESHOLD {
            return HUGE * HUGE;
        }
        if x < U_THRESHOLD {
            return TWO_M1000 * TWO_M1000;
        }
    }

    // Reduce x to r = x - k ln 2 with |r| <= 0.5 ln 2, kept as hi - lo.
    let (mut r, hi, lo, k) = if hx > 0x3fd6_2e42 {
        let (hi, lo, k) = if hx < 0x3FF0_A2B2 {
            // V8 returns its constant for e itself, which the steps below miss by one bit.
            if x == 1.0 {
                return std::f64::consts::E;
            }
            if negative {
                (x + LN2_HI, -LN2_LO, -1)
            } else {
                (x - LN2_HI, LN2_LO, 1)
            }
        } else {
            let half = if negative { -0.5 } else { 0.5 };
            // Truncation toward zero, as C's conversion to int.
            let k = (INV_LN2 * x + half) as i32;
            let t = f64::from(k);
            (x - t * LN2_HI, t * LN2_LO, k)
        };
        (hi - lo, hi, lo, k)
    } else if hx < 0x3e30_0000 {
        // |x| < 2^-28: 1 + x is exact enough, and raises inexact as fdlibm does.
        if HUGE + x > 1.0 {
            return 1.0 + x;
        }
        (x, 0.0, 0.0, 0)
    } else {
        (x, 0.0, 0.0, 0)
    };

    // The rational approximation on the primary range.
    let t = r * r;
    let c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    if k == 0 {
        return 1.0 - ((r * c) / (c - 2.0) - r);
    }
    r = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);

    // Scale by 2^k.
    if k >= -1021 {
        if k == 1024 {
            return r * 2.0 * from_high_word(0x7fe0_0000);
        }
        let two_to_k = from_high_word((0x3ff0_0000_i64 + (i64::from(k) << 20)) as u32);
        r * two_to_k
    } else {
        let two_to_k = from_high_word((0x3ff0_0000_i64 + (i64::from(k + 1000) << 20)) as u32);
        r * two_to_k * TWO_M1000
    }
}

#[cfg(test)]
mod tests {
    use super::exp;
    use agent_memory_core::SplitMix64;

    /// A uniform double in [0, 1) from the top 53 bits.
    fn unit(rng: &mut SplitMix64) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn the_reference_case_gets_v8s_bits() {
        let days = 1.604_694_710_648_148_2_f64;
        assert_eq!(exp(-days / 14.0), 0.891_703_990_438_407_9);
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(1.0), std::f64::consts::E);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(-800.0), 0.0);
        assert_eq!(exp(710.0), f64::INFINITY);
    }

    /// Everywhere it is finite, it stays within one unit in the last place of the platform's
    /// `exp` (both are accurate to better than one ulp, so they can differ by one at most).
    #[test]
    fn it_is_within_one_ulp_of_the_platform_exp() {
        let mut rng = SplitMix64::new(11);
        for _ in 0..200_000 {
            let x = (unit(&mut rng) * 1_450.0) - 740.0;
            let (ours, platform) = (exp(x), x.exp());
            let ulps = (ours.to_bits() as i64 - platform.to_bits() as i64).abs();
            assert!(ulps <= 1, "exp({x:e}): {ours:e} vs {platform:e}");
        }
    }

    /// The inputs the agreement test sends to Node: ages a trace score meets, then the whole
    /// finite range and the edges of the reduction's branches.
    fn inputs() -> Vec<f64> {
        let mut rng = SplitMix64::new(2026);
        let mut inputs = Vec::with_capacity(100_000);
        for i in 0..100_000 {
            let x = match i % 4 {
                // -age / 14 for ages from milliseconds to years, as trace scores compute it.
                0 | 1 => -(unit(&mut rng) * 400.0) / 14.0,
                2 => (unit(&mut rng) * 1_450.0) - 745.0,
                _ => (unit(&mut rng) - 0.5) * 2.2,
            };
            inputs.push(x);
        }
        inputs.extend([
            1.0,
            -1.0,
            0.5,
            0.346_573_590_279_972_6,
            1.039_720_770_839_917_9,
            1e-9,
        ]);
        inputs
    }

    /// Bit for bit what Node's `Math.exp` prints for 100,000 inputs. It runs when `node` is on
    /// the PATH, and always under `CI=true`, where a missing Node fails it.
    #[test]
    fn it_agrees_with_node_bit_for_bit() {
        use std::io::Write;
        use std::process::{Command, Stdio};

        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        let child = Command::new("node")
            .args([
                "-e",
                "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{\
                 const out=s.trim().split('\\n').map(l=>{\
                 const b=new DataView(new ArrayBuffer(8));b.setBigUint64(0,BigInt('0x'+l));\
                 const r=new DataView(new ArrayBuffer(8));r.setFloat64(0,Math.exp(b.getFloat64(0)));\
                 return r.getBigUint64(0).toString(16)});process.stdout.write(out.join('\\n'))})",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) if !ci => {
                eprintln!("node is not available ({e}); the agreement with V8 is not checked");
                return;
            }
            Err(e) => panic!("CI=true needs node for the Math.exp agreement test: {e}"),
        };
        let inputs = inputs();
        let text: String = inputs
            .iter()
            .map(|x| format!("{:x}\n", x.to_bits()))
            .collect();
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write inputs");
        let output = child.wait_with_output().expect("node output");
        assert!(output.status.success(), "node failed");
        let printed = String::from_utf8(output.stdout).expect("utf-8");
        let theirs: Vec<u64> = printed
            .lines()
            .map(|l| u64::from_str_radix(l, 16).expect("hex"))
            .collect();
        assert_eq!(theirs.len(), inputs.len());
        let mut differ = Vec::new();
        for (x, bits) in inputs.iter().zip(&theirs) {
            if exp(*x).to_bits() != *bits {
                differ.push(*x);
            }
        }
        assert!(
            differ.is_empty(),
            "{} of {} inputs differ from V8, first {:?}",
            differ.len(),
            inputs.len(),
            &differ[..differ.len().min(5)]
        );
        let platform_differs = inputs
            .iter()
            .zip(&theirs)
            .filter(|(x, bits)| x.exp().to_bits() != **bits)
            .count();
        eprintln!(
            "Math.exp: {} of {} inputs agree bit for bit (the platform's exp differs on {platform_differs})",
            inputs.len(),
            inputs.len()
        );
    }
}
