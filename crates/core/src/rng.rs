//! The one random-number generator of cclab, and the numbering of its streams.
//!
//! Every random process of a run (the link's loss, the delivery process, each flow's sender)
//! draws from its own stream, derived from the scenario's seed and a fixed label, so that both
//! engines draw the same sequences for a seed and adding a flow never shifts another's draws.

/// Small, fast, seedable generator (xoshiro256++). Kept in-tree so that results stay
/// byte-identical across dependency upgrades; determinism is a product guarantee.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // SplitMix64 expands the seed so that nearby seeds give unrelated streams.
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    /// An independent stream derived from this seed and a label (e.g. a flow id).
    pub fn derive(seed: u64, stream: u64) -> Rng {
        Rng::new(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03).rotate_left(17))
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = (s[0].wrapping_add(s[3])).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Exponentially distributed with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }
}

/// Stream labels: one independent stream per random process. Both engines use these.
pub mod stream {
    /// i.i.d. loss before the bottleneck.
    pub const LOSS: u64 = 1;
    /// The bottleneck's delivery process (Poisson opportunities).
    pub const LINK: u64 = 2;
    /// The data direction's delay jitter (`link.delay_jitter`).
    pub const JITTER: u64 = 3;
    /// The ACK direction's bottleneck (`link.reverse_trace`); a trace draws nothing today, but
    /// the bottleneck owns a stream so a random reverse process never shifts another.
    pub const REVERSE_LINK: u64 = 4;
    /// The bottleneck's queue discipline, where it draws (PIE's and RED's drop decisions).
    pub const QUEUE: u64 = 5;
    /// The `[middlebox]` inbox's queue discipline, where it draws.
    pub const INBOX_QUEUE: u64 = 6;
    /// The request workload of `[[flows]]` entry `i` (`traffic = "requests"`: arrival times
    /// and sizes) draws from `REQUESTS + i`.
    pub const REQUESTS: u64 = 500;
    /// Flow `i`'s sender draws from `FLOW + i`.
    pub const FLOW: u64 = 1000;
    /// Flow `i`'s sending host's processing jitter (`[hosts] jitter`, on its data packets)
    /// draws from `SEND_HOST + i`.
    pub const SEND_HOST: u64 = 2_000_000;
    /// Flow `i`'s receiving host's processing jitter (on its ACKs) draws from `RECV_HOST + i`.
    pub const RECV_HOST: u64 = 3_000_000;
    /// The connection a request of `[[flows]]` entry `i` goes to when every one is busy draws
    /// from `REQUEST_CONNECTIONS + i`: a stream of its own, so that whether (and how often) all
    /// connections are busy, which depends on the path and the end hosts, never shifts the
    /// arrival times and sizes the configurations of a comparison share.
    pub const REQUEST_CONNECTIONS: u64 = 4_000_000;
    /// Flow `i`'s start jitter (`[[flows]] start_jitter`) draws from `START + i`.
    pub const START: u64 = 5_000_000;
    /// The phase of flow `i`'s sender's millisecond clock (its TCP timestamps) against the
    /// run's clock draws from `TS_CLOCK + i`.
    pub const TS_CLOCK: u64 = 6_000_000;
}
