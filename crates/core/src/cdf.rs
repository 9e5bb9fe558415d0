//! Empirical request-size distributions: the empirical traffic generator's CDF files (one
//! `size_bytes cdf_value` pair per line, ascending), sampled by inverse transform with linear
//! interpolation between points and rounded up to whole bytes (its `INTER_INTEGRAL` mode).
//!
//! The files the project ships live in `python/cclab/data/cdfs/` (their one home, packaged with
//! the Python package); they are embedded here at build time so that a scenario can name one
//! (`cdf = "CAIDA_CDF"`) from any folder and any engine.

use crate::rng::Rng;
use std::path::Path;

/// The shipped distributions by name, embedded from the Python package's data folder.
pub const BUILTIN: &[(&str, &str)] = &[
    ("CAIDA_CDF", include_str!("../../../python/cclab/data/cdfs/CAIDA_CDF")),
    ("MIXED_CDF", include_str!("../../../python/cclab/data/cdfs/MIXED_CDF")),
    ("TINY_CDF", include_str!("../../../python/cclab/data/cdfs/TINY_CDF")),
    ("BIG_CDF", include_str!("../../../python/cclab/data/cdfs/BIG_CDF")),
];

/// The largest request a distribution may name: 1 TB. A bigger "request" is a bulk transfer
/// (`traffic = "bulk"`), and sizes near f64's range would make the arrival process meaningless.
pub const MAX_REQUEST_BYTES: f64 = 1e12;

/// A piecewise-linear CDF over request sizes in bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct EmpiricalCdf {
    /// (size in bytes, cumulative probability), sizes and probabilities non-decreasing, the
    /// last probability 1.
    points: Vec<(f64, f64)>,
}

impl EmpiricalCdf {
    /// Parses a CDF file's text; errors name `file:line` and what is accepted.
    pub fn parse(text: &str, file: &str) -> Result<EmpiricalCdf, String> {
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let t = raw.split('#').next().unwrap_or("").trim();
            if t.is_empty() {
                continue;
            }
            last_line = line;
            let at = |msg: String| format!("{file}:{line}: {msg}");
            let fields: Vec<&str> = t.split_whitespace().collect();
            let [size, p] = fields[..] else {
                return Err(at(format!(
                    "expected two numbers `size_bytes cdf_value` (e.g. `10000 0.976`), found {} field(s)",
                    fields.len()
                )));
            };
            let size: f64 = size.parse().map_err(|_| at(format!("`{size}` is not a size in bytes")))?;
            let p: f64 = p.parse().map_err(|_| at(format!("`{p}` is not a probability")))?;
            if !(size.is_finite() && (0.0..=MAX_REQUEST_BYTES).contains(&size)) {
                return Err(at(format!(
                    "size {size} must be a number of bytes from 0 to {MAX_REQUEST_BYTES:e} (larger transfers are bulk flows)"
                )));
            }
            if !(0.0..=1.0).contains(&p) {
                return Err(at(format!("cdf value {p} is not in [0, 1]")));
            }
            if let Some(&(s0, p0)) = points.last() {
                if size < s0 || p < p0 {
                    return Err(at(format!(
                        "points must ascend: ({size}, {p}) comes after ({s0}, {p0}); sizes and cdf values never decrease"
                    )));
                }
            }
            points.push((size, p));
        }
        match points.last() {
            None => Err(format!("{file}: no points; expected lines of `size_bytes cdf_value`")),
            Some(&(_, p)) if (p - 1.0).abs() > 1e-9 => {
                Err(format!("{file}:{last_line}: the last cdf value is {p}; a CDF must end at 1"))
            }
            Some(_) => {
                let cdf = EmpiricalCdf { points };
                // Requests are drawn at load / mean size per second: a distribution of empty
                // requests would ask for infinitely many.
                if cdf.mean() < 1.0 {
                    return Err(format!(
                        "{file}: the mean request is {} bytes; a distribution must hold requests of at least one byte on average",
                        cdf.mean()
                    ));
                }
                Ok(cdf)
            }
        }
    }

    /// A shipped distribution by name (`CAIDA_CDF`, ...), or else a file.
    pub fn load(name_or_path: &str) -> Result<EmpiricalCdf, String> {
        if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Self::parse(text, name);
        }
        let text = crate::input::read_text(Path::new(name_or_path), crate::input::MAX_CDF_BYTES).map_err(|e| {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            format!("cannot read the CDF file {name_or_path}: {e}; give a file or one of {}", names.join(", "))
        })?;
        Self::parse(&text, name_or_path)
    }

    /// Whether `name` is one of the shipped distributions.
    pub fn is_builtin(name: &str) -> bool {
        BUILTIN.iter().any(|(n, _)| *n == name)
    }

    /// The mean of the piecewise-linear distribution, bytes (the generator's `avg()`: each
    /// segment contributes its midpoint times its probability mass).
    pub fn mean(&self) -> f64 {
        let first = self.points[0];
        let mut m = first.0 * first.1;
        for w in self.points.windows(2) {
            let ((s0, p0), (s1, p1)) = (w[0], w[1]);
            m += (s0 + s1) / 2.0 * (p1 - p0);
        }
        m
    }

    /// The size at cumulative probability `u` in [0, 1), linearly interpolated, unrounded.
    pub fn quantile(&self, u: f64) -> f64 {
        // The first point at or above u; a jump (equal sizes) or a flat step (equal
        // probabilities) is handled by taking the first segment that contains u.
        let i = self.points.partition_point(|&(_, p)| p < u);
        if i == 0 {
            return self.points[0].0;
        }
        if i >= self.points.len() {
            return self.points[self.points.len() - 1].0;
        }
        let ((s0, p0), (s1, p1)) = (self.points[i - 1], self.points[i]);
        if p1 <= p0 {
            return s1;
        }
        s0 + (u - p0) / (p1 - p0) * (s1 - s0)
    }

    /// One request size, bytes: inverse transform of a uniform draw, rounded up, at least 1.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        (self.quantile(rng.uniform()).ceil() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_cdfs_parse_with_the_means_the_reference_gives() {
        // reproduction-targets §1.2: CAIDA 21,025 B, MIXED 52,500 B, TINY 2,500, BIG 500 KB.
        for (name, mean) in
            [("CAIDA_CDF", 21_025.0), ("MIXED_CDF", 52_500.0), ("TINY_CDF", 2_500.0), ("BIG_CDF", 500_000.0)]
        {
            let cdf = EmpiricalCdf::load(name).unwrap();
            assert!((cdf.mean() - mean).abs() < 1.0, "{name}: {}", cdf.mean());
        }
    }

    #[test]
    fn interpolates_linearly_and_rounds_up() {
        let cdf = EmpiricalCdf::parse("0 0\n5000 0.9\n1e6 1\n", "t").unwrap();
        assert_eq!(cdf.quantile(0.45), 2500.0);
        assert_eq!(cdf.quantile(0.9), 5000.0);
        assert!((cdf.quantile(0.95) - 502_500.0).abs() < 1e-6);
        // A draw between whole bytes rounds up.
        let tiny = EmpiricalCdf::parse("0 0\n10 1\n", "t").unwrap();
        assert_eq!(tiny.quantile(0.55), 5.5);
    }

    /// The sample mean of n draws has standard error σ/√n; CAIDA's σ is dominated by its
    /// 5e6–1e8 segment (E[X²] ≈ 2·10⁻⁴ · (a² + ab + b²)/3 ≈ 7.1·10¹¹, σ ≈ 0.84 MB), so 2·10⁶
    /// draws give a standard error ≈ 600 B: a 4σ band is ±2,400 B on a 21 kB mean. TINY
    /// (σ = 5000/√12 ≈ 1,443 B) gets a tight bound; rounding up adds half a byte on average.
    #[test]
    fn sample_mean_matches_the_cdf_mean() {
        let mut rng = Rng::new(7);
        let caida = EmpiricalCdf::load("CAIDA_CDF").unwrap();
        let n = 2_000_000;
        let m: f64 = (0..n).map(|_| caida.sample(&mut rng) as f64).sum::<f64>() / n as f64;
        assert!((m - caida.mean()).abs() < 2_400.0, "sample mean {m} vs {}", caida.mean());
        let tiny = EmpiricalCdf::load("TINY_CDF").unwrap();
        let n = 200_000;
        let m: f64 = (0..n).map(|_| tiny.sample(&mut rng) as f64).sum::<f64>() / n as f64;
        // σ/√n = 1443/447 = 3.2 B; 4σ = 13 B, plus the 0.5 B of rounding.
        assert!((m - (tiny.mean() + 0.5)).abs() < 13.0, "sample mean {m}");
        // The fraction at or below 10 KB is CAIDA's 97.6%.
        let small = (0..100_000).filter(|_| caida.sample(&mut rng) <= 10_000).count() as f64 / 1e5;
        assert!((small - 0.976).abs() < 0.003, "{small}");
    }

    #[test]
    fn bad_files_name_the_line() {
        let e = EmpiricalCdf::parse("0 0\n100 0.5 x\n", "f.cdf").unwrap_err();
        assert!(e.starts_with("f.cdf:2:"), "{e}");
        let e = EmpiricalCdf::parse("0 0\n100 0.5\n50 0.7\n", "f.cdf").unwrap_err();
        assert!(e.starts_with("f.cdf:3:") && e.contains("ascend"), "{e}");
        let e = EmpiricalCdf::parse("0 0\n# comment\n100 0.5\n\n", "f.cdf").unwrap_err();
        assert!(e.starts_with("f.cdf:3:") && e.contains("end at 1"), "{e}");
        let e = EmpiricalCdf::parse("0 0\n100 1.5\n", "f.cdf").unwrap_err();
        assert!(e.contains("f.cdf:2:") && e.contains("[0, 1]"), "{e}");
        assert!(EmpiricalCdf::load("NOPE_CDF").unwrap_err().contains("CAIDA_CDF"));
    }

    /// Found by the issue-16 campaign: a distribution of empty requests made the arrival
    /// process ask for infinitely many (a hang); a 1e30-byte request validated.
    #[test]
    fn refuses_empty_and_unphysical_requests() {
        let e = EmpiricalCdf::parse("0 0\n0 1\n", "f.cdf").unwrap_err();
        assert!(e.starts_with("f.cdf:") && e.contains("at least one byte"), "{e}");
        let e = EmpiricalCdf::parse("0 0\n1e30 1\n", "f.cdf").unwrap_err();
        assert!(e.starts_with("f.cdf:2:") && e.contains("bulk"), "{e}");
        // Special files are refused by the bounded reader, not read forever.
        let e = EmpiricalCdf::load("/dev/zero").unwrap_err();
        assert!(e.contains("/dev/zero") && e.contains("regular file"), "{e}");
    }
}
