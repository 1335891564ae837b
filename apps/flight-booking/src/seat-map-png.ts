import { deflateSync } from "node:zlib";

// A seat map drawn in code and encoded as a PNG by hand (signature, IHDR, IDAT, IEND), so the
// sample needs no image library and fetches no file. Free seats are green, taken ones grey.

const CELL = 14; // pixels per seat, including a 2-pixel gap
const AISLE = 10;
const FREE: RGB = [46, 160, 67];
const TAKEN: RGB = [150, 150, 150];
type RGB = [number, number, number];

export function seatMapPng(
  rows: number,
  seatsPerRow: number,
  isTaken: (seat: number) => boolean,
): Uint8Array {
  const half = Math.ceil(seatsPerRow / 2);
  const width = seatsPerRow * CELL + AISLE + 4;
  const height = rows * CELL + 4;
  const pixels = Buffer.alloc(width * height * 3, 255); // white background
  const paint = (x: number, y: number, color: RGB) => pixels.set(color, (y * width + x) * 3);

  for (let row = 0; row < rows; row++) {
    for (let col = 0; col < seatsPerRow; col++) {
      const color = isTaken(row * seatsPerRow + col) ? TAKEN : FREE;
      const left = 2 + col * CELL + (col >= half ? AISLE : 0);
      const top = 2 + row * CELL;
      for (let y = top; y < top + CELL - 2; y++)
        for (let x = left; x < left + CELL - 2; x++) paint(x, y, color);
    }
  }
  return encodePng(width, height, pixels);
}

function encodePng(width: number, height: number, rgb: Buffer): Uint8Array {
  // Each scanline starts with its filter type; 0 (none) keeps the encoder trivial.
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) rgb.copy(raw, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits per channel, truecolor RGB, default compression/filter, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, "ascii");
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
