//! The link model both ends share: the rate grid, the Brownian-walk-with-outage process and
//! the per-rate forecast tables (`process.cc`, `processforecaster.cc`), with the numerics they
//! need.

use super::*;
use std::sync::OnceLock;

/// The complementary error function, accurate to ~1e-16 absolute for x ≥ 0: a positive-term
/// series of erf below 5, a continued fraction above (where erfc < 2e-12).
pub(super) fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 5.0 {
        // erf(x) = 2/√π · e^{−x²} · Σ 2ⁿ x^{2n+1} / (1·3·…·(2n+1)); every term is positive.
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term > sum * 1e-17 {
            n += 1.0;
            term *= 2.0 * x * x / (2.0 * n + 1.0);
            sum += term;
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp() * sum
    } else {
        // erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …))))), evaluated
        // from the tail; 60 levels are far more than x ≥ 5 needs.
        let mut f = x;
        for k in (1..=60).rev() {
            f = x + (k as f64 / 2.0) / f;
        }
        (-x * x).exp() / std::f64::consts::PI.sqrt() / f
    }
}

/// Standard normal CDF of x/σ.
pub(super) fn normal_cdf(x: f64, sigma: f64) -> f64 {
    0.5 * erfc(-x / (sigma * std::f64::consts::SQRT_2))
}

/// ln k!, exactly summed (k is a packet count in one tick).
pub(super) fn ln_factorial(k: u64) -> f64 {
    (2..=k).map(|i| (i as f64).ln()).sum()
}

/// Poisson probability of `k` events at mean `lambda` (`poissonpdf`), with ln k! given.
pub(super) fn poisson_pdf(lambda: f64, k: u64, ln_k_fact: f64) -> f64 {
    if lambda == 0.0 {
        if k == 0 {
            1.0
        } else {
            0.0
        }
    } else {
        (-lambda + k as f64 * lambda.ln() - ln_k_fact).exp()
    }
}

/// The rate grid (`SampledFunction(NUM_BINS, MAX_ARRIVAL_RATE, 0)`): bin i covers
/// [i·w, (i+1)·w), bin 0 is the outage state, the last bin runs to infinity.
pub(super) struct Grid {
    pub(super) width: f64,
    pub(super) size: usize,
}

impl Grid {
    pub(super) fn new(samples: usize, max: f64, min: f64) -> Grid {
        let width = (max - min) / samples as f64;
        Grid { width, size: ((max - min) / width) as usize + 1 }
    }

    pub(super) fn to_bin(&self, x: f64, offset: f64) -> usize {
        let b = ((x - offset) / self.width) as i64;
        b.clamp(0, self.size as i64 - 1) as usize
    }

    pub(super) fn floor(&self, bin: usize, offset: f64) -> f64 {
        if bin == 0 {
            -BIG
        } else {
            bin as f64 * self.width + offset
        }
    }

    pub(super) fn ceil(&self, bin: usize, offset: f64) -> f64 {
        if bin >= self.size - 1 {
            BIG
        } else {
            (bin + 1) as f64 * self.width + offset
        }
    }

    pub(super) fn mid(&self, bin: usize, offset: f64) -> f64 {
        if bin == 0 {
            offset
        } else {
            (bin as f64 + 0.5) * self.width + offset
        }
    }
}

/// Everything about the process that does not depend on observations, computed once per run
/// of the program: the one-tick diffusion as a banded matrix, and, per rate bin, the
/// distribution of cumulative deliveries over 1…8 ticks (`ProcessForecastInterval`).
pub(super) struct Model {
    /// Rate midpoints, packets/s.
    pub(super) mid: Vec<f64>,
    /// `evolve`: row `old` spreads its mass over bins `lo[old]..lo[old] + w[old].len()`.
    pub(super) evolve_lo: Vec<usize>,
    pub(super) evolve_w: Vec<Vec<f64>>,
    /// `forecast[k][c * bins + b]`: probability that a link at rate bin b delivers c packets in
    /// the next k + 1 ticks (counts truncated per tick as the reference does).
    pub(super) forecast: Vec<Vec<f64>>,
}

impl Model {
    pub(super) fn get() -> &'static Model {
        static MODEL: OnceLock<Model> = OnceLock::new();
        MODEL.get_or_init(Model::build)
    }

    pub(super) fn bins(&self) -> usize {
        self.mid.len()
    }

    pub(super) fn build() -> Model {
        let grid = Grid::new(NUM_BINS, MAX_ARRIVAL_RATE, 0.0);
        let n = grid.size;
        let mid: Vec<f64> = (0..n).map(|i| grid.mid(i, 0.0)).collect();
        let t = TICK as f64 / 1e9;

        // Process::evolve over one tick. The reference reads the normal CDF from a table
        // (`GaussianCache`) indexed by bin; the same quantisation is reproduced here.
        let stddev = BROWNIAN_MOTION_RATE * t.sqrt();
        let gauss = Grid::new(GAUSSIAN_BINS, MAX_ARRIVAL_RATE, -MAX_ARRIVAL_RATE);
        let cdf = |x: f64| normal_cdf(gauss.mid(gauss.to_bin(x, -MAX_ARRIVAL_RATE), -MAX_ARRIVAL_RATE), stddev);
        let zero_escape = 1.0 - poisson_pdf(t * OUTAGE_ESCAPE_RATE, 0, 0.0);
        let mut evolve_lo = Vec::with_capacity(n);
        let mut evolve_w = Vec::with_capacity(n);
        for (old, &old_rate) in mid.iter().enumerate() {
            // `for_range(old − 5σ, old + 5σ)`: from the bin of the floor of the low end to the
            // bin of the ceiling of the high end.
            let lo = grid.to_bin(grid.floor(grid.to_bin(old_rate - 5.0 * stddev, 0.0), 0.0), 0.0);
            let hi = grid.to_bin(grid.ceil(grid.to_bin(old_rate + 5.0 * stddev, 0.0), 0.0), 0.0);
            let row: Vec<f64> = (lo..=hi)
                .map(|new| {
                    let zfactor = match (old, new) {
                        (0, 0) => 1.0 - zero_escape,
                        (0, _) => zero_escape,
                        _ => 1.0,
                    };
                    let p = cdf(grid.ceil(new, 0.0) - old_rate) - cdf(grid.floor(new, 0.0) - old_rate);
                    zfactor * p.max(0.0)
                })
                .collect();
            evolve_lo.push(lo);
            evolve_w.push(row);
        }

        // ProcessForecastTick: per rate bin, P(c arrivals in a tick) for c < 30.
        let ln_fact: Vec<f64> = (0..MAX_ARRIVALS_PER_TICK as u64).map(ln_factorial).collect();
        let tick_prob: Vec<Vec<f64>> = mid
            .iter()
            .map(|&rate| (0..MAX_ARRIVALS_PER_TICK).map(|c| poisson_pdf(rate * t, c as u64, ln_fact[c])).collect())
            .collect();

        let mut model = Model { mid, evolve_lo, evolve_w, forecast: Vec::new() };
        let lens: Vec<usize> = (1..=NUM_TICKS).map(|k| 1 + k * (MAX_ARRIVALS_PER_TICK - 1)).collect();
        let mut forecast: Vec<Vec<f64>> = lens.iter().map(|len| vec![0.0; len * n]).collect();
        // ProcessForecastInterval: for each component (the process certain to be at bin b),
        // convolve the per-tick count distributions while evolving the component forward. The
        // k-tick interval is the prefix of the same chain, so one pass fills all eight.
        let mut pmf = vec![0.0; n];
        let mut tick = vec![0.0; MAX_ARRIVALS_PER_TICK];
        for b in 0..n {
            pmf.fill(0.0);
            pmf[b] = 1.0;
            let mut chain = vec![1.0];
            for (k, table) in forecast.iter_mut().enumerate() {
                normalize(&mut pmf);
                for (c, slot) in tick.iter_mut().enumerate() {
                    let p: f64 = pmf.iter().zip(&tick_prob).map(|(w, probs)| w * probs[c]).sum();
                    *slot = p.min(1.0);
                }
                chain = convolve(&chain, &tick);
                debug_assert_eq!(chain.len(), lens[k]);
                for (c, p) in chain.iter().enumerate() {
                    table[c * n + b] = *p;
                }
                pmf = model.evolve(&pmf);
            }
        }
        model.forecast = forecast;
        model
    }

    /// `Process::evolve` over one tick (mass is not conserved at the outage state and the grid's
    /// ends, as in the reference; the next normalisation takes care of it).
    pub(super) fn evolve(&self, pmf: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; pmf.len()];
        for (old, &p) in pmf.iter().enumerate() {
            if p == 0.0 {
                continue;
            }
            let lo = self.evolve_lo[old];
            for (j, w) in self.evolve_w[old].iter().enumerate() {
                out[lo + j] += p * w;
            }
        }
        out
    }

    /// `ProcessForecastInterval::lower_quantile` over `k + 1` ticks for a normalised `pmf`.
    pub(super) fn lower_quantile(&self, pmf: &[f64], k: usize, q: f64) -> u32 {
        let n = self.bins();
        let table = &self.forecast[k];
        let counts = table.len() / n;
        let mut sum = 0.0;
        for c in 0..counts {
            let p: f64 = pmf.iter().zip(&table[c * n..(c + 1) * n]).map(|(w, x)| w * x).sum();
            sum += p.min(1.0);
            if sum >= q {
                return c as u32;
            }
        }
        counts as u32 + 1
    }

    /// The 8 cumulative counts (saturated to 8 bits for the feedback payload: they never exceed
    /// 1 + 8·29 = 233 here).
    pub(super) fn forecast(&self, pmf: &[f64]) -> [u8; NUM_TICKS] {
        let mut out = [0u8; NUM_TICKS];
        for (k, slot) in out.iter_mut().enumerate() {
            *slot = self.lower_quantile(pmf, k, FORECAST_QUANTILE).min(u8::MAX as u32) as u8;
        }
        out
    }
}

pub(super) fn normalize(pmf: &mut [f64]) {
    let sum: f64 = pmf.iter().sum();
    if sum > 0.0 && sum.is_finite() {
        for p in pmf.iter_mut() {
            *p /= sum;
        }
    } else {
        // Every hypothesis was ruled out (impossible in exact arithmetic): start from the prior.
        pmf.fill(1.0 / pmf.len() as f64);
    }
}

pub(super) fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}
