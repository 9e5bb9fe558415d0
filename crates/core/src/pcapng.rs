//! The pcapng file format's blocks, as far as cclab's captures need them (draft-ietf-opsawg-
//! pcapng): one Section Header Block, one Interface Description Block for raw IP packets with
//! nanosecond timestamps, then one Enhanced Packet Block per packet. Little-endian, every block
//! padded to 32 bits and closed by its total length, as the format asks. Both the simulator's
//! synthetic capture (`pcap`) and the emulator's capture of the real packets write through here.

use std::io::{self, Write};

/// LINKTYPE_RAW: each packet starts with its IP header.
pub const LINKTYPE_RAW: u16 = 101;
const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Option codes: end of options; shb_userappl; if_name; if_tsresol.
const OPT_END: u16 = 0;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;
/// if_tsresol's value: 10^-9 s, so an EPB's 64-bit timestamp counts nanoseconds.
const TSRESOL_NS: u8 = 9;

/// Bytes of padding that take `len` to a multiple of 4.
fn pad(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// One option (code, length, value padded to 32 bits) appended to `b`.
fn option(b: &mut Vec<u8>, code: u16, value: &[u8]) {
    b.extend_from_slice(&code.to_le_bytes());
    b.extend_from_slice(&(value.len() as u16).to_le_bytes());
    b.extend_from_slice(value);
    b.extend(std::iter::repeat_n(0, pad(value.len())));
}

/// A whole block: type, total length, `body` (already padded), total length again.
fn block(out: &mut impl Write, kind: u32, body: &[u8]) -> io::Result<()> {
    let total = (12 + body.len()) as u32;
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&total.to_le_bytes())
}

/// Writes the file's start: the section header (length unknown, so -1, which readers accept
/// and which a streamed capture needs) and the one interface, raw IP packets cut at `snaplen`
/// bytes with nanosecond timestamps; `if_name` says where the capture was taken.
pub fn write_header(out: &mut impl Write, snaplen: u32, if_name: &str) -> io::Result<()> {
    let mut shb = Vec::with_capacity(64);
    shb.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes()); // major version
    shb.extend_from_slice(&0u16.to_le_bytes()); // minor version
    shb.extend_from_slice(&(-1i64).to_le_bytes()); // section length: not given
    option(&mut shb, SHB_USERAPPL, b"cclab");
    option(&mut shb, OPT_END, &[]);
    block(out, SHB, &shb)?;
    let mut idb = Vec::with_capacity(64);
    idb.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
    idb.extend_from_slice(&0u16.to_le_bytes()); // reserved
    idb.extend_from_slice(&snaplen.to_le_bytes());
    option(&mut idb, IF_NAME, if_name.as_bytes());
    option(&mut idb, IF_TSRESOL, &[TSRESOL_NS]);
    option(&mut idb, OPT_END, &[]);
    block(out, IDB, &idb)
}

/// Bytes an Enhanced Packet Block holding `captured` bytes takes in the file.
pub fn packet_block_len(captured: usize) -> usize {
    32 + captured + pad(captured)
}

/// Appends one packet of interface 0 to `out`: `time_ns` since the epoch of the capture, the
/// `captured` bytes (at most the snap length), `orig_len` bytes on the wire. Builds the block
/// in memory first, so that a caller batching blocks hands whole blocks to its writer.
pub fn push_packet(out: &mut Vec<u8>, time_ns: u64, captured: &[u8], orig_len: u32) {
    let total = packet_block_len(captured.len()) as u32;
    out.extend_from_slice(&EPB.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // interface id
    out.extend_from_slice(&((time_ns >> 32) as u32).to_le_bytes());
    out.extend_from_slice(&(time_ns as u32).to_le_bytes());
    out.extend_from_slice(&(captured.len() as u32).to_le_bytes());
    out.extend_from_slice(&orig_len.to_le_bytes());
    out.extend_from_slice(captured);
    out.extend(std::iter::repeat_n(0, pad(captured.len())));
    out.extend_from_slice(&total.to_le_bytes());
}

/// A pcapng file read back: the snap length and link type of its interface, and each packet's
/// (time in ns, original length, captured bytes). For tests (of this crate and the emulator's);
/// it checks every block's framing and refuses anything it does not expect.
#[derive(Debug)]
pub struct Capture {
    pub linktype: u16,
    pub snaplen: u32,
    pub tsresol: u8,
    pub packets: Vec<(u64, u32, Vec<u8>)>,
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Parses a little-endian pcapng file of one section and one interface (what this module
/// writes); the error says what is wrong and where.
pub fn read(b: &[u8]) -> Result<Capture, String> {
    let mut cap = Capture { linktype: 0, snaplen: 0, tsresol: 6, packets: Vec::new() };
    let mut at = 0;
    let mut blocks = 0;
    while at < b.len() {
        if b.len() - at < 12 {
            return Err(format!("truncated block at byte {at}"));
        }
        let (kind, total) = (le32(b, at), le32(b, at + 4) as usize);
        if total % 4 != 0 || total < 12 || at + total > b.len() || le32(b, at + total - 4) as usize != total {
            return Err(format!("block at byte {at}: bad total length {total}"));
        }
        let body = &b[at + 8..at + total - 4];
        match (blocks, kind) {
            (0, SHB) if le32(body, 0) == BYTE_ORDER_MAGIC => {}
            (1, IDB) => {
                cap.linktype = u16::from_le_bytes([body[0], body[1]]);
                cap.snaplen = le32(body, 4);
                let mut o = 8;
                while o + 4 <= body.len() {
                    let code = u16::from_le_bytes([body[o], body[o + 1]]);
                    let len = u16::from_le_bytes([body[o + 2], body[o + 3]]) as usize;
                    if code == IF_TSRESOL {
                        cap.tsresol = body[o + 4];
                    }
                    o += 4 + len + pad(len);
                }
            }
            (n, EPB) if n >= 2 => {
                let time = ((le32(body, 4) as u64) << 32) | le32(body, 8) as u64;
                let (caplen, orig) = (le32(body, 12) as usize, le32(body, 16));
                if le32(body, 0) != 0 || 20 + caplen + pad(caplen) != body.len() {
                    return Err(format!("packet block at byte {at}: bad interface or length"));
                }
                cap.packets.push((time, orig, body[20..20 + caplen].to_vec()));
            }
            _ => return Err(format!("unexpected block type {kind:#x} at byte {at} (block {blocks})")),
        }
        blocks += 1;
        at += total;
    }
    if blocks < 2 {
        return Err("no section header and interface".into());
    }
    Ok(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_framed_and_padded_to_32_bits() {
        let mut b = Vec::new();
        write_header(&mut b, 128, "x").unwrap();
        let header = b.len();
        assert_eq!(header % 4, 0);
        // SHB: 12 bytes of framing + 16 fixed + the "cclab" option (12) + the end option (4).
        assert_eq!((le32(&b, 0), le32(&b, 4)), (SHB, 44));
        assert_eq!(le32(&b, 8), BYTE_ORDER_MAGIC);
        for (len, t) in [(1usize, 5_000_000_000_123u64), (52, 7), (0, 0)] {
            let before = b.len();
            push_packet(&mut b, t, &vec![0xab; len], 1500);
            assert_eq!(b.len() - before, packet_block_len(len));
            assert_eq!((b.len() - before) % 4, 0);
        }
        let cap = read(&b).unwrap();
        assert_eq!((cap.linktype, cap.snaplen, cap.tsresol), (LINKTYPE_RAW, 128, 9));
        assert_eq!(cap.packets.len(), 3);
        assert_eq!(cap.packets[0], (5_000_000_000_123, 1500, vec![0xab]));
        assert_eq!(cap.packets[1].2.len(), 52);
        // A cut-off file is refused, not read short.
        assert!(read(&b[..b.len() - 2]).is_err());
        assert!(read(&b[..header]).unwrap().packets.is_empty());
    }
}
