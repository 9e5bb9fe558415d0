//! Packet records: what both engines emit for every data and ACK packet, and the columnar
//! packet log that stores them when asked.

/// Marks a time that never happened (a dropped packet's arrival, an ACK's bottleneck times).
pub const NEVER: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketKind {
    Data = 0,
    Ack = 1,
}

impl PacketKind {
    /// Names of the kinds, indexed by their `u8` code (the packet table's `kind` categories).
    pub const NAMES: [&'static str; 2] = ["data", "ack"];
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// What became of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Fate {
    Delivered = 0,
    /// Dropped because the bottleneck queue was full (or by the AQM).
    DropQueue = 1,
    /// Dropped by the link's i.i.d. random loss.
    DropLoss = 2,
    /// Dropped by a device outside the model (the emulator's TUN backlog).
    DropDevice = 3,
    /// Still in the network when the run ended.
    InFlight = 4,
}

impl Fate {
    /// Names of the fates, indexed by their `u8` code (the packet table's `fate` categories).
    pub const NAMES: [&'static str; 5] = ["delivered", "queue", "loss", "device", "in_flight"];
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
    pub fn from_u8(v: u8) -> Option<Fate> {
        Some(match v {
            0 => Fate::Delivered,
            1 => Fate::DropQueue,
            2 => Fate::DropLoss,
            3 => Fate::DropDevice,
            4 => Fate::InFlight,
            _ => return None,
        })
    }
}

/// One packet's life. Times are nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRecord {
    /// Unique over the run.
    pub uid: u64,
    pub flow: u32,
    pub kind: PacketKind,
    /// Bytes on the wire.
    pub size: u32,
    pub sent: u64,
    /// Arrival at the far end, or [`NEVER`].
    pub arrived: u64,
    pub fate: Fate,
    /// Entry into and exit from the bottleneck queue, or [`NEVER`] when it did not get there.
    pub enqueued: u64,
    pub dequeued: u64,
    pub retransmission: bool,
    /// A data segment that carried PSH (Linux's end of a write: its receiver may acknowledge
    /// it alone once read); false for ACKs.
    pub push: bool,
    /// TCP's sequence field as a capture of the segment would show it: for data, the stream
    /// offset of its first byte; for an ACK, the cumulative acknowledgment (the next byte
    /// expected). 32 bits, wrapping as TCP's do (RFC 9293 §3.4), so the record stays 56 bytes.
    /// The emulator's kernel TCP flows carry the wire's absolute numbers (from the ISN).
    pub seq: u32,
}

impl PacketRecord {
    /// The time the record is complete: arrival, or the time the packet's fate was sealed.
    pub fn one_way_delay(&self) -> Option<u64> {
        (self.fate == Fate::Delivered).then(|| self.arrived - self.sent)
    }
}

/// Anything that consumes records as packets finish.
pub trait RecordSink {
    fn record(&mut self, r: &PacketRecord);
}

/// The full packet log in columns, ready to hand to Arrow/numpy without reshaping.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacketLog {
    pub uid: Vec<u64>,
    pub flow: Vec<u32>,
    pub kind: Vec<u8>,
    pub size: Vec<u32>,
    pub sent: Vec<u64>,
    pub arrived: Vec<u64>,
    pub fate: Vec<u8>,
    pub enqueued: Vec<u64>,
    pub dequeued: Vec<u64>,
    pub retransmission: Vec<bool>,
    pub push: Vec<bool>,
    pub seq: Vec<u32>,
}

impl PacketLog {
    /// Room for `n` more records in every column.
    pub fn reserve(&mut self, n: usize) {
        self.uid.reserve(n);
        self.flow.reserve(n);
        self.kind.reserve(n);
        self.size.reserve(n);
        self.sent.reserve(n);
        self.arrived.reserve(n);
        self.fate.reserve(n);
        self.enqueued.reserve(n);
        self.dequeued.reserve(n);
        self.retransmission.reserve(n);
        self.push.reserve(n);
        self.seq.reserve(n);
    }

    pub fn len(&self) -> usize {
        self.uid.len()
    }
    pub fn is_empty(&self) -> bool {
        self.uid.is_empty()
    }
    pub fn get(&self, i: usize) -> PacketRecord {
        PacketRecord {
            uid: self.uid[i],
            flow: self.flow[i],
            kind: if self.kind[i] == 0 { PacketKind::Data } else { PacketKind::Ack },
            size: self.size[i],
            sent: self.sent[i],
            arrived: self.arrived[i],
            fate: Fate::from_u8(self.fate[i]).unwrap_or(Fate::InFlight),
            enqueued: self.enqueued[i],
            dequeued: self.dequeued[i],
            retransmission: self.retransmission[i],
            push: self.push[i],
            seq: self.seq[i],
        }
    }
}

impl RecordSink for PacketLog {
    fn record(&mut self, r: &PacketRecord) {
        self.uid.push(r.uid);
        self.flow.push(r.flow);
        self.kind.push(r.kind as u8);
        self.size.push(r.size);
        self.sent.push(r.sent);
        self.arrived.push(r.arrived);
        self.fate.push(r.fate as u8);
        self.enqueued.push(r.enqueued);
        self.dequeued.push(r.dequeued);
        self.retransmission.push(r.retransmission);
        self.push.push(r.push);
        self.seq.push(r.seq);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_record_stays_56_bytes() {
        // Every packet of a run passes through the sinks as one record: five u64, two u32 and
        // three one-byte fields took 51 bytes, padded to 56; `seq` (u32) and `push` (one
        // byte) fill the padding, so adding them cost no size.
        assert_eq!(std::mem::size_of::<super::PacketRecord>(), 56);
    }
}
