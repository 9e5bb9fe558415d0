//! A histogram of one-way delays in whole microseconds: exact while it fits its memory budget,
//! then log-linear with a bounded relative error.
//!
//! Exactness (the exact form): a delay `d` ns is counted in the bucket `floor(d / 1000)` µs, and every bucket
//! keeps an exact count, so any order statistic (min, nearest-rank percentile) is the exact order
//! statistic of the floored delays. For logs whose timestamps have µs (or coarser) resolution —
//! the Pantheon's, mahimahi's — that is the exact value; for the simulator's ns timestamps it is
//! the exact value truncated to the µs below (error < 1 µs, never the rank).
//!
//! Layout: counters live in pages of 128 consecutive µs, reached through a two-level directory
//! (a block of 512 page slots covers 65.536 ms). Consecutive packets of a flow have similar
//! delays, so they hit the same few cache lines; a hash map would scatter them and cost a cache
//! miss per packet at 100 flows. Memory is bounded by the distinct delay values (at most one
//! 1 KiB page per distinct value, far less when delays cluster, as they do) and never by the
//! number of packets. Iteration is in ascending delay order by construction, so results do not
//! depend on insertion order.
//!
//! Bound (issue 12): the exact form's memory grows with the distinct delays, and those grow with
//! simulated time when the queue wanders over hundreds of ms (5000 flows × a 300 ms buffer held
//! gigabytes after 30 s) or without bound (an infinite queue). So each histogram has a budget:
//! once the exact form's size — a function of the *set* of distinct delays, never of their
//! order — exceeds it, the histogram re-buckets everything into the log-linear form: delays
//! below 512 µs stay exact, larger ones keep their top 9 significant bits, i.e. each is
//! counted at the lower edge of a bucket no wider than 1/256 of its value (error < 0.4%, never
//! above the true value). Its size is bounded by ~256 counters per octave of delays the flow
//! actually saw. Because the switch depends only on the final set of distinct delays, the result
//! still depends on the multiset of records alone. The per-flow budget is a share of
//! [`TOTAL_BUDGET`], so runs of a few flows (every shipped scenario, every golden digest) stay
//! exact and thousands of flows stay within tens of MB.

use std::collections::BTreeMap;

const PAGE_BITS: u32 = 7;
const PAGE: usize = 1 << PAGE_BITS;
const BLOCK_BITS: u32 = 9;
const BLOCK: usize = 1 << BLOCK_BITS;
const TOP_SHIFT: u32 = PAGE_BITS + BLOCK_BITS;
/// Delays from here on (~71.6 min) go to an ordered map: the dense directory is indexed by
/// delay, and a corrupt record with an absurd delay must not allocate gigabytes.
const DENSE_LIMIT: u64 = 1 << 32;
const NONE: u32 = u32::MAX;

/// Bytes all per-flow delay histograms of one run may hold in exact form, shared equally.
pub const TOTAL_BUDGET: usize = 64 << 20;
/// A flow's exact form may always use this much, however many flows share the total.
pub const MIN_FLOW_BUDGET: usize = 16 << 10;
/// Significant bits the log-linear form keeps: values below 2^SUB_BITS µs are exact.
const SUB_BITS: u32 = 9;
const HALF: usize = 1 << (SUB_BITS - 1);

/// A delay histogram: exact until its budget is exceeded, log-linear after (module docs).
#[derive(Clone, Debug)]
pub(crate) struct DelayHist {
    repr: Repr,
    budget: usize,
}

#[derive(Clone, Debug)]
enum Repr {
    Exact(Exact),
    Log(LogHist),
}

impl Default for DelayHist {
    /// The budget of a single flow: the whole [`TOTAL_BUDGET`].
    fn default() -> Self {
        DelayHist::with_budget(TOTAL_BUDGET)
    }
}

impl DelayHist {
    pub fn with_budget(budget: usize) -> Self {
        DelayHist { repr: Repr::Exact(Exact::default()), budget }
    }

    /// The budget of one of `n_flows` histograms sharing [`TOTAL_BUDGET`].
    pub fn flow_budget(n_flows: usize) -> usize {
        (TOTAL_BUDGET / n_flows.max(1)).max(MIN_FLOW_BUDGET)
    }

    /// Counts `n` packets whose delay is `us` whole microseconds.
    #[inline]
    pub fn add(&mut self, us: u64, n: u64) {
        match &mut self.repr {
            Repr::Exact(e) => {
                if e.add(us, n) && e.logical_bytes() > self.budget {
                    self.coarsen();
                }
            }
            Repr::Log(l) => l.add(us, n),
        }
    }

    /// Cache hint: the counter a later `add(us, _)` will update, when it exists already (a
    /// hint that changes no count).
    #[inline]
    pub fn prefetch(&self, us: u64) {
        let counter = match &self.repr {
            Repr::Exact(e) => e.counter(us).map(|i| &e.counts[i]),
            Repr::Log(l) => log_bucket(us).checked_sub(l.lo).and_then(|k| l.counts.get(k)),
        };
        if let Some(c) = counter {
            crate::hint::prefetch(c);
        }
    }

    #[cold]
    fn coarsen(&mut self) {
        let Repr::Exact(e) = &self.repr else { return };
        let mut l = LogHist::default();
        for (us, n) in e.iter() {
            l.add(us, n);
        }
        self.repr = Repr::Log(l);
    }

    /// Whether every value is still counted exactly (to the µs).
    #[cfg(test)]
    pub fn is_exact(&self) -> bool {
        matches!(self.repr, Repr::Exact(_))
    }

    /// Number of packets counted.
    #[cfg(test)]
    pub fn total(&self) -> u64 {
        match &self.repr {
            Repr::Exact(e) => e.total,
            Repr::Log(l) => l.total,
        }
    }

    /// (delay µs, count) for every delay (exact form) or bucket's lower edge (log-linear form)
    /// seen, in ascending order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        match &self.repr {
            Repr::Exact(e) => Box::new(e.iter()),
            Repr::Log(l) => Box::new(l.iter()),
        }
    }

    pub fn min(&self) -> Option<u64> {
        self.iter().next().map(|(us, _)| us)
    }

    /// The value at 0-based rank `rank` of the sorted delays.
    pub fn at_rank(&self, rank: u64) -> Option<u64> {
        let mut seen = 0;
        for (us, c) in self.iter() {
            seen += c;
            if seen > rank {
                return Some(us);
            }
        }
        None
    }

    /// Nearest-rank percentile, as numpy's `percentile(..., method='nearest')`.
    pub fn percentile(&self, q: f64) -> Option<u64> {
        let total = match &self.repr {
            Repr::Exact(e) => e.total,
            Repr::Log(l) => l.total,
        };
        if total == 0 {
            return None;
        }
        self.at_rank(super::nearest_rank(total, q))
    }

    /// Number of distinct delay values (or buckets).
    #[cfg(test)]
    pub fn distinct(&self) -> usize {
        self.iter().count()
    }

    /// Heap bytes held, for memory-bound checks.
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Exact(e) => e.heap_bytes(),
            Repr::Log(l) => l.counts.capacity() * 8,
        }
    }
}

/// The log-linear form: counters for bucket indices `lo..lo + counts.len()`.
#[derive(Clone, Debug, Default)]
struct LogHist {
    lo: usize,
    counts: Vec<u64>,
    total: u64,
}

/// The bucket of `us`: itself below 2^SUB_BITS, else (octave, top SUB_BITS bits), numbered so
/// that bucket order is value order.
#[inline]
pub(crate) fn log_bucket(us: u64) -> usize {
    if us < (1 << SUB_BITS) {
        return us as usize;
    }
    let shift = 64 - us.leading_zeros() - SUB_BITS;
    ((shift as usize) << (SUB_BITS - 1)) + (us >> shift) as usize
}

/// The lower edge of bucket `i`, in µs.
pub(crate) fn log_bucket_floor(i: usize) -> u64 {
    if i < (1 << SUB_BITS) {
        return i as u64;
    }
    let shift = i / HALF - 1;
    ((i - shift * HALF) as u64) << shift
}

impl LogHist {
    #[inline]
    fn add(&mut self, us: u64, n: u64) {
        self.total += n;
        let i = log_bucket(us);
        if self.counts.is_empty() {
            self.lo = i;
        }
        if i < self.lo {
            // A new smallest delay: re-base into a vector of exactly the new span.
            let mut counts = Vec::with_capacity(self.lo - i + self.counts.len());
            counts.resize(self.lo - i, 0);
            counts.extend_from_slice(&self.counts);
            (self.counts, self.lo) = (counts, i);
        }
        let k = i - self.lo;
        if k >= self.counts.len() {
            // Exact growth: the span of buckets only grows when a new extreme delay is seen.
            self.counts.reserve_exact(k + 1 - self.counts.len());
            self.counts.resize(k + 1, 0);
        }
        self.counts[k] += n;
    }

    fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|&(_, &c)| c != 0).map(|(k, &c)| (log_bucket_floor(self.lo + k), c))
    }
}

#[derive(Clone, Debug)]
struct Exact {
    /// Per 65.536 ms span: index of its block in `slots`, or NONE.
    top: Vec<u32>,
    /// BLOCK page slots per block: index of the page in `counts`, or NONE.
    slots: Vec<u32>,
    /// PAGE counters per page.
    counts: Vec<u64>,
    far: BTreeMap<u64, u64>,
    total: u64,
    /// The page of the last dense delay counted (`us >> PAGE_BITS`) and its offset in `counts`:
    /// a flow's next packet usually lands in the same page, skipping both directory loads.
    hot_page: u64,
    hot_base: usize,
}

impl Default for Exact {
    fn default() -> Self {
        Exact {
            top: Vec::new(),
            slots: Vec::new(),
            counts: Vec::new(),
            far: BTreeMap::new(),
            total: 0,
            // No delay's page: dense pages are below DENSE_LIMIT >> PAGE_BITS, far delays are
            // never cached.
            hot_page: u64::MAX,
            hot_base: 0,
        }
    }
}

impl Exact {
    /// Counts `n` packets whose delay is `us` whole microseconds; true when that took memory.
    #[inline]
    fn add(&mut self, us: u64, n: u64) -> bool {
        self.total += n;
        if us >= DENSE_LIMIT {
            let fresh = !self.far.contains_key(&us);
            *self.far.entry(us).or_insert(0) += n;
            return fresh;
        }
        let (i, grew) = match self.counter(us) {
            Some(i) => (i, false),
            None => (self.new_counter(us), true),
        };
        self.hot_page = us >> PAGE_BITS;
        self.hot_base = i & !(PAGE - 1);
        self.counts[i] += n;
        grew
    }

    /// Makes the block and page of dense delay `us` that `counter` did not find; its counter's
    /// index.
    #[cold]
    fn new_counter(&mut self, us: u64) -> usize {
        let t = (us >> TOP_SHIFT) as usize;
        let b = match self.top.get(t) {
            Some(&b) if b != NONE => b,
            _ => self.new_block(t),
        };
        let s = b as usize * BLOCK + ((us >> PAGE_BITS) as usize & (BLOCK - 1));
        let p = match self.slots[s] {
            NONE => self.new_page(s),
            p => p,
        };
        p as usize * PAGE + (us as usize & (PAGE - 1))
    }

    /// The index in `counts` of delay `us`'s counter, if its page exists.
    #[inline]
    fn counter(&self, us: u64) -> Option<usize> {
        let offset = us as usize & (PAGE - 1);
        if us >> PAGE_BITS == self.hot_page {
            return Some(self.hot_base + offset);
        }
        if us >= DENSE_LIMIT {
            return None;
        }
        let b = *self.top.get((us >> TOP_SHIFT) as usize)?;
        if b == NONE {
            return None;
        }
        let p = self.slots[b as usize * BLOCK + ((us >> PAGE_BITS) as usize & (BLOCK - 1))];
        (p != NONE).then(|| p as usize * PAGE + offset)
    }

    /// The size the exact form needs for its set of distinct delays (its lengths, not the Vecs'
    /// capacities, which depend on the order of growth): what the budget is compared against.
    fn logical_bytes(&self) -> usize {
        self.top.len() * 4 + self.slots.len() * 4 + self.counts.len() * 8 + self.far.len() * 32
    }

    #[cold]
    fn new_block(&mut self, t: usize) -> u32 {
        if t >= self.top.len() {
            self.top.resize(t + 1, NONE);
        }
        let b = (self.slots.len() / BLOCK) as u32;
        self.slots.resize(self.slots.len() + BLOCK, NONE);
        self.top[t] = b;
        b
    }

    #[cold]
    fn new_page(&mut self, slot: usize) -> u32 {
        let p = (self.counts.len() / PAGE) as u32;
        self.counts.resize(self.counts.len() + PAGE, 0);
        self.slots[slot] = p;
        p
    }

    /// (delay µs, count) for every delay seen, in ascending order of delay.
    fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let dense = self.top.iter().enumerate().filter(|&(_, &b)| b != NONE).flat_map(move |(t, &b)| {
            let slots = &self.slots[b as usize * BLOCK..][..BLOCK];
            slots.iter().enumerate().filter(|&(_, &p)| p != NONE).flat_map(move |(s, &p)| {
                let base = ((t << BLOCK_BITS) | s) << PAGE_BITS;
                let page = &self.counts[p as usize * PAGE..][..PAGE];
                page.iter().enumerate().filter(|&(_, &c)| c != 0).map(move |(i, &c)| ((base | i) as u64, c))
            })
        });
        dense.chain(self.far.iter().map(|(&us, &c)| (us, c)))
    }

    fn heap_bytes(&self) -> usize {
        self.top.capacity() * 4
            + self.slots.capacity() * 4
            + self.counts.capacity() * 8
            + self.far.len() * 2 * std::mem::size_of::<u64>()
    }
}
