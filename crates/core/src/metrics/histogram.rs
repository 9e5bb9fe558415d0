//! An exact histogram of one-way delays in whole microseconds.
//!
//! Exactness: a delay `d` ns is counted in the bucket `floor(d / 1000)` µs, and every bucket
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

#[derive(Clone, Debug)]
pub(crate) struct DelayHist {
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

impl Default for DelayHist {
    fn default() -> Self {
        DelayHist {
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

impl DelayHist {
    /// Counts `n` packets whose delay is `us` whole microseconds.
    #[inline]
    pub fn add(&mut self, us: u64, n: u64) {
        self.total += n;
        let page = us >> PAGE_BITS;
        if page == self.hot_page {
            self.counts[self.hot_base + (us as usize & (PAGE - 1))] += n;
            return;
        }
        if us >= DENSE_LIMIT {
            *self.far.entry(us).or_insert(0) += n;
            return;
        }
        let t = (us >> TOP_SHIFT) as usize;
        let b = match self.top.get(t) {
            Some(&b) if b != NONE => b,
            _ => self.new_block(t),
        };
        let s = b as usize * BLOCK + ((us >> PAGE_BITS) as usize & (BLOCK - 1));
        let mut p = self.slots[s];
        if p == NONE {
            p = self.new_page(s);
        }
        self.hot_page = page;
        self.hot_base = p as usize * PAGE;
        self.counts[self.hot_base + (us as usize & (PAGE - 1))] += n;
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

    /// Number of packets counted.
    #[cfg(test)]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// (delay µs, count) for every delay seen, in ascending order of delay.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
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
        if self.total == 0 {
            return None;
        }
        self.at_rank(super::nearest_rank(self.total, q))
    }

    /// Number of distinct delay values.
    #[cfg(test)]
    pub fn distinct(&self) -> usize {
        self.iter().count()
    }

    /// Heap bytes held, for memory-bound checks.
    pub fn heap_bytes(&self) -> usize {
        self.top.capacity() * 4
            + self.slots.capacity() * 4
            + self.counts.capacity() * 8
            + self.far.len() * 2 * std::mem::size_of::<u64>()
    }
}
