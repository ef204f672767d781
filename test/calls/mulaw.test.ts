import t from 'tap';
import { linearToMulaw, mulawToLinear, mulawWav, MULAW_SILENCE } from '../../shared/audio/mulaw-wav.ts';

t.test('G.711 μ-law code points', async (t) => {
  t.equal(linearToMulaw(0), 0xff, 'zero is 0xff');
  t.equal(MULAW_SILENCE, 0xff);
  t.equal(linearToMulaw(32767), 0x80, 'positive full scale');
  t.equal(linearToMulaw(-32768), 0x00, 'negative full scale');
  t.equal(linearToMulaw(-1), 0x7f, 'smallest negative');
  t.equal(mulawToLinear(0xff), 0);
  t.equal(mulawToLinear(0x80), 32124);
  t.equal(mulawToLinear(0x00), -32124);
});

t.test('decode(encode(x)) stays within the quantisation step of its segment', async (t) => {
  let worst = 0;
  for (let x = -32000; x <= 32000; x += 37) {
    const y = mulawToLinear(linearToMulaw(x));
    const step = Math.max(8, Math.abs(x) / 16); // segments double; each has 16 steps
    worst = Math.max(worst, Math.abs(x - y) / step);
  }
  t.ok(worst <= 1, `relative error ${worst.toFixed(2)} within one step`);
});

t.test('WAV container', async (t) => {
  const w = mulawWav(Buffer.alloc(8000, 0xff));
  t.equal(w.length, 58 + 8000);
  t.equal(w.readUInt32LE(4), w.length - 8, 'RIFF size');
  t.equal(w.toString('ascii', 36 + 2, 42), 'fact');
  t.equal(w.readUInt32LE(46), 8000, 'sample frames');
  t.equal(w.readUInt16LE(34), 8, 'bits per sample');
});
