//! Nimbus's elasticity detection (reference §10.2–10.3; Goyal et al., arXiv 1802.08730, code
//! ccp-project/nimbus), the one piece both Nimbus controllers share: the end-host scheme
//! ([`crate::nimbus`]) and the aggregate controller in Bundler's inbox (`cclab-engine`'s
//! middlebox). The sender adds a known asymmetric pulse to its rate and, every 10 ms, records
//! its estimate of the cross traffic ẑ = μ·S/R − S and what it gets through, zout = μ − R.
//! Elastic cross traffic (buffer-filling TCP) answers the pulse, so the pulse's frequency stands
//! out of ẑ's spectrum; inelastic traffic does not. An EWMA of that prominence, with
//! hysteresis and minimum times, decides between delay mode and competitive mode.

use cclab_core::time::{Time, MS, SEC};
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};
use std::collections::VecDeque;
use std::sync::Arc;

/// The period of [`Elasticity::record`]: Nimbus's measurement interval.
pub const TICK: Time = 10 * MS;
const TICKS_PER_SEC: f64 = (SEC / TICK) as f64;
/// FFT length: 5 s of 10 ms samples (500), rounded up to a power of two.
pub const FFT_LEN: usize = 512;
/// Pulse frequencies: competitive and delay mode differ so that Nimbus flows can tell pulser
/// from watcher (§10.2).
const PULSE_HZ_COMPETITIVE: f64 = 5.0;
const PULSE_HZ_DELAY: f64 = 6.0;
/// EWMA weight per sample, thresholds with hysteresis, and the times before the detector may
/// decide (§10.3).
const ELASTICITY_GAIN: f64 = 0.01;
pub const TO_COMPETITIVE: f64 = 2.25;
pub const TO_DELAY: f64 = 2.0;
const NO_FFT_BEFORE: Time = 10 * SEC;
const NO_SWITCH_BEFORE: Time = 15 * SEC;
const MIN_DELAY_MODE_GAP: Time = 5 * SEC;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Delay,
    Competitive,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Delay => "delay",
            Mode::Competitive => "competitive",
        }
    }
}

/// The detector: the pulse, the ẑ and zout series, and the mode they decide.
pub struct Elasticity {
    mode: Mode,
    /// ẑ and zout every tick, newest last, at most FFT_LEN.
    z_hist: VecDeque<f64>,
    zout_hist: VecDeque<f64>,
    elasticity: f64,
    last_eta: f64,
    last_switch: Time,
    fft: Arc<dyn Fft<f64>>,
}

impl Default for Elasticity {
    fn default() -> Self {
        Elasticity {
            mode: Mode::Delay,
            z_hist: VecDeque::new(),
            zout_hist: VecDeque::new(),
            elasticity: 0.0,
            last_eta: 0.0,
            last_switch: 0,
            fft: FftPlanner::new().plan_fft_forward(FFT_LEN),
        }
    }
}

impl Elasticity {
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The smoothed elasticity and its last raw sample η.
    pub fn elasticity(&self) -> f64 {
        self.elasticity
    }

    pub fn last_eta(&self) -> f64 {
        self.last_eta
    }

    pub fn pulse_hz(&self) -> f64 {
        match self.mode {
            Mode::Competitive => PULSE_HZ_COMPETITIVE,
            Mode::Delay => PULSE_HZ_DELAY,
        }
    }

    /// The zero-mean asymmetric pulse at `t` of amplitude `a` (§10.2): a half-sine of `a` over
    /// the first quarter of each period, a negative half-sine of `a`/3 over the other three.
    pub fn pulse(&self, t: Time, a: f64) -> f64 {
        let period = 1.0 / self.pulse_hz();
        let phase = (t as f64 / SEC as f64 % period) / period;
        if phase < 0.25 {
            a * (std::f64::consts::PI * phase / 0.25).sin()
        } else {
            -a / 3.0 * (std::f64::consts::PI * (phase - 0.25) / 0.75).sin()
        }
    }

    /// Records one tick's ẑ and zout.
    pub fn record(&mut self, z: f64, zout: f64) {
        self.z_hist.push_back(z);
        self.zout_hist.push_back(zout);
        if self.z_hist.len() > FFT_LEN {
            self.z_hist.pop_front();
            self.zout_hist.pop_front();
        }
    }

    /// After [`Elasticity::record`]: takes an η sample once the window is full and `since`
    /// (time since the controller started) allows, and switches modes if `switching`. Returns
    /// the new mode when it switched at `now`.
    pub fn update(&mut self, now: Time, since: Time, mu: f64, switching: bool) -> Option<Mode> {
        if self.z_hist.len() < FFT_LEN || since < NO_FFT_BEFORE {
            return None;
        }
        self.last_eta = self.eta(mu);
        self.elasticity += ELASTICITY_GAIN * (self.last_eta - self.elasticity);
        if !switching || since < NO_SWITCH_BEFORE {
            return None;
        }
        let to = match self.mode {
            Mode::Delay if self.elasticity > TO_COMPETITIVE => Mode::Competitive,
            Mode::Competitive if self.elasticity < TO_DELAY && now - self.last_switch >= MIN_DELAY_MODE_GAP => {
                Mode::Delay
            }
            _ => return None,
        };
        self.mode = to;
        self.last_switch = now;
        Some(to)
    }

    /// Magnitude spectrum of a detrended series.
    fn spectrum(&self, x: &VecDeque<f64>) -> Vec<f64> {
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let mut buf: Vec<Complex<f64>> = x.iter().map(|v| Complex::new(v - mean, 0.0)).collect();
        buf.resize(FFT_LEN, Complex::new(0.0, 0.0));
        self.fft.process(&mut buf);
        buf.iter().map(|c| c.norm()).collect()
    }

    /// The peak magnitude near `f` (the bin and its neighbours: the pulse is not periodic in
    /// the window, so its energy leaks into the next bins).
    fn peak_at(spec: &[f64], f: f64) -> f64 {
        let k = (f * FFT_LEN as f64 / TICKS_PER_SEC).round() as usize;
        spec[k - 1..=k + 1].iter().copied().fold(0.0, f64::max)
    }

    /// The largest magnitude with frequency in (lo, hi) Hz.
    fn band_max(spec: &[f64], lo: f64, hi: f64) -> f64 {
        let bin = |f: f64| f * FFT_LEN as f64 / TICKS_PER_SEC;
        let (a, b) = (bin(lo).floor() as usize + 1, bin(hi).ceil() as usize - 1);
        spec[a..=b].iter().copied().fold(f64::MIN_POSITIVE, f64::max)
    }

    /// One elasticity sample η from the last FFT_LEN ticks (§10.3, the code's `elasticity2`).
    fn eta(&self, mu: f64) -> f64 {
        let fp = self.pulse_hz();
        let avg_z = self.z_hist.iter().sum::<f64>() / self.z_hist.len() as f64;
        if avg_z < 0.1 * mu {
            return 0.0; // hardly any cross traffic: nothing to compete with
        }
        if avg_z > 0.9 * mu {
            return 6.0; // the cross traffic has taken nearly everything
        }
        let z = self.spectrum(&self.z_hist);
        let zout = self.spectrum(&self.zout_hist);
        let (lo, hi) = (fp + 1.5, 2.0 * fp - 0.5);
        let zp = Self::peak_at(&z, fp);
        let mut eta = zp / Self::band_max(&z, lo, hi);
        let zoutp = Self::peak_at(&zout, fp);
        if zoutp / Self::band_max(&zout, lo, hi) < 2.0 {
            // Our own pulse does not show in what we get through: no evidence either way.
            return 3.0;
        }
        if zp < 0.25 * zoutp {
            eta = eta.min(3.0) * zp / (0.25 * zoutp);
        }
        eta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pulse_is_zero_mean_and_asymmetric() {
        let e = Elasticity { mode: Mode::Competitive, ..Default::default() }; // 5 Hz: a 200 ms period
        let a = 0.25e6;
        let samples: Vec<f64> = (0..200_000).map(|us| e.pulse(us * 1000, a)).collect();
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        assert!(mean.abs() < 1e-3 * a, "mean {mean}");
        let max = samples.iter().copied().fold(f64::MIN, f64::max);
        let min = samples.iter().copied().fold(f64::MAX, f64::min);
        assert!((max - a).abs() < 1.0 && (min + a / 3.0).abs() < 1.0, "{max} {min}");
        // The peak comes an eighth of a period in (25 ms).
        assert!((e.pulse(25 * MS, a) - a).abs() < 1.0);
    }

    #[test]
    fn eta_sees_a_pulse_in_the_cross_traffic_and_not_in_noise() {
        let mut e = Elasticity { mode: Mode::Competitive, ..Default::default() };
        let (mu, a) = (1e6, 0.25e6);
        // zout carries our pulse in every case.
        e.zout_hist = (0..FFT_LEN).map(|i| 5e5 - e.pulse(i as u64 * TICK, a)).collect();
        // Elastic: the cross traffic moves against our pulse.
        e.z_hist = (0..FFT_LEN).map(|i| 5e5 - 0.5 * e.pulse(i as u64 * TICK, a)).collect();
        let elastic = e.eta(mu);
        // Inelastic: a constant rate plus deterministic broadband wiggle.
        e.z_hist = (0..FFT_LEN).map(|i| 5e5 + 2e4 * ((i * 7919 % 101) as f64 / 50.0 - 1.0)).collect();
        let inelastic = e.eta(mu);
        assert!(elastic > TO_COMPETITIVE, "elastic η {elastic}");
        assert!(inelastic < TO_DELAY, "inelastic η {inelastic}");
        // Little cross traffic: no elasticity at all.
        e.z_hist = (0..FFT_LEN).map(|_| 5e4).collect();
        assert_eq!(e.eta(mu), 0.0);
    }
}
