/**
 * Every H.264 sequence parameter set of a stream, read (issue 34, item 2): a stream's first SPS
 * is what ffprobe reports, and a file may switch to another mid-stream (a 640x360 start, then
 * frames at 8192x4608). A copy is judged on them all: the stream copy writes its SPS units beside
 * the copy (`filter_units=pass_types=7`, Annex B), and this reads them. Pure: bytes in, facts out.
 *
 * The syntax is ITU-T H.264 section 7.3.2.1.1, read up to the frame cropping; VUI and what
 * follows are not needed. A unit that cannot be read is reported as such, never guessed at.
 */

/** What a sequence parameter set says of the pictures that use it. */
export interface SpsFacts {
  profileIdc: number;
  levelIdc: number;
  /** 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4. */
  chromaFormatIdc: number;
  bitDepthLuma: number;
  bitDepthChroma: number;
  /** Coded size after cropping, in pixels. */
  width: number;
  height: number;
  /** Frames only (progressive), not fields. */
  frameMbsOnly: boolean;
}

/** The NAL units of an Annex B byte stream (start codes 00 00 01 or 00 00 00 01), without them. */
export function annexBUnits(stream: Uint8Array): Uint8Array[] {
  const starts: Array<{ at: number; code: number }> = [];
  for (let i = 0; i + 2 < stream.length; i++) {
    if (stream[i] === 0 && stream[i + 1] === 0 && stream[i + 2] === 1) {
      starts.push({ at: i + 3, code: i > 0 && stream[i - 1] === 0 ? 4 : 3 });
      i += 2;
    }
  }
  return starts.map((s, k) => {
    const next = starts[k + 1];
    return stream.subarray(s.at, next ? next.at - next.code : stream.length);
  });
}

/** Reads the SPS units of an Annex B stream; `unreadable` counts those that do not parse. */
export function readSpsUnits(stream: Uint8Array): { sps: SpsFacts[]; unreadable: number } {
  const sps: SpsFacts[] = [];
  let unreadable = 0;
  for (const unit of annexBUnits(stream)) {
    if (unit.length === 0 || (unit[0]! & 0x1f) !== 7) continue;
    const facts = parseSps(unit);
    if (facts) sps.push(facts);
    else unreadable++;
  }
  return { sps, unreadable };
}

/** One SPS NAL unit (its header byte first) read; null when it is not one or is cut short. */
export function parseSps(unit: Uint8Array): SpsFacts | null {
  if (unit.length < 4 || (unit[0]! & 0x1f) !== 7) return null;
  const r = new BitReader(unescape(unit.subarray(1)));
  try {
    const profileIdc = r.bits(8);
    r.bits(8); // constraint flags
    const levelIdc = r.bits(8);
    r.ue(); // seq_parameter_set_id
    let chromaFormatIdc = 1;
    let bitDepthLuma = 8;
    let bitDepthChroma = 8;
    let separateColourPlane = false;
    if (HIGH_PROFILES.has(profileIdc)) {
      chromaFormatIdc = r.ue();
      if (chromaFormatIdc > 3) return null;
      if (chromaFormatIdc === 3) separateColourPlane = r.bits(1) === 1;
      bitDepthLuma = r.ue() + 8;
      bitDepthChroma = r.ue() + 8;
      r.bits(1); // qpprime_y_zero_transform_bypass_flag
      if (r.bits(1) === 1) {
        // seq_scaling_matrix_present_flag: the lists are skipped, read only to pass them.
        for (let i = 0; i < (chromaFormatIdc !== 3 ? 8 : 12); i++) if (r.bits(1) === 1) skipScalingList(r, i < 6 ? 16 : 64);
      }
    }
    r.ue(); // log2_max_frame_num_minus4
    const pocType = r.ue();
    if (pocType === 0) r.ue();
    else if (pocType === 1) {
      r.bits(1);
      r.se();
      r.se();
      const cycle = r.ue();
      if (cycle > 255) return null;
      for (let i = 0; i < cycle; i++) r.se();
    } else if (pocType !== 2) return null;
    r.ue(); // max_num_ref_frames
    r.bits(1); // gaps_in_frame_num_value_allowed_flag
    const widthMbs = r.ue() + 1;
    const heightMapUnits = r.ue() + 1;
    const frameMbsOnly = r.bits(1) === 1;
    if (!frameMbsOnly) r.bits(1); // mb_adaptive_frame_field_flag
    r.bits(1); // direct_8x8_inference_flag
    let crop = { left: 0, right: 0, top: 0, bottom: 0 };
    if (r.bits(1) === 1) crop = { left: r.ue(), right: r.ue(), top: r.ue(), bottom: r.ue() };
    // Crop units (section 7.4.2.1.1): by the chroma subsampling, and doubled for fields.
    const arrayType = separateColourPlane ? 0 : chromaFormatIdc;
    const cropX = arrayType === 0 ? 1 : arrayType === 3 ? 1 : 2;
    const cropY = (arrayType === 1 ? 2 : 1) * (frameMbsOnly ? 1 : 2);
    const width = widthMbs * 16 - cropX * (crop.left + crop.right);
    const height = heightMapUnits * 16 * (frameMbsOnly ? 1 : 2) - cropY * (crop.top + crop.bottom);
    if (width <= 0 || height <= 0) return null;
    return { profileIdc, levelIdc, chromaFormatIdc, bitDepthLuma, bitDepthChroma, width, height, frameMbsOnly };
  } catch {
    return null; // ran off the end: cut short
  }
}

/** The profiles whose SPS carries chroma format and bit depths (section 7.3.2.1.1). */
const HIGH_PROFILES = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]);

function skipScalingList(r: BitReader, size: number): void {
  let last = 8;
  let next = 8;
  for (let j = 0; j < size; j++) {
    if (next !== 0) next = (last + r.se() + 256) % 256;
    last = next === 0 ? last : next;
  }
}

/** The RBSP of a NAL unit's payload: each emulation prevention byte (00 00 03) taken out. */
function unescape(payload: Uint8Array): Uint8Array {
  const out: number[] = [];
  let zeros = 0;
  for (const b of payload) {
    if (zeros >= 2 && b === 3) {
      zeros = 0;
      continue;
    }
    out.push(b);
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return Uint8Array.from(out);
}

/** Reads bits, and Exp-Golomb codes, most significant first; throws past the end. */
class BitReader {
  private pos = 0;
  constructor(private readonly bytes: Uint8Array) {}

  bits(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++) {
      const byte = this.bytes[this.pos >> 3];
      if (byte === undefined) throw new RangeError('past the end');
      v = v * 2 + ((byte >> (7 - (this.pos & 7))) & 1);
      this.pos++;
    }
    return v;
  }

  ue(): number {
    let zeros = 0;
    while (this.bits(1) === 0) {
      if (++zeros > 31) throw new RangeError('an Exp-Golomb code too long');
    }
    return 2 ** zeros - 1 + this.bits(zeros);
  }

  se(): number {
    const k = this.ue();
    return k % 2 === 1 ? (k + 1) / 2 : -k / 2;
  }
}
