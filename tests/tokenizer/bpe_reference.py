#!/usr/bin/python3
"""Reference byte-level BPE, written from the published algorithms with python3-regex (the
`regex` module OpenAI's encoder.py itself imports), independently of triax's C++:
  openai/gpt-2 src/encoder.py: bytes_to_unicode, the pre-tokenisation pattern, `bpe` (merge the
    lowest-ranked pair, all its occurrences, until none is ranked);
  tiktoken's byte_pair_merge for rank files (a piece that is a token is taken whole);
  Llama 3's and Qwen2's patterns (meta-llama/llama3 llama/tokenizer.py; Qwen2 single digits).

  bpe_reference.py random N SEED OUT.json           random Unicode/whitespace/digit/contraction
                                                    strings
  bpe_reference.py gpt2 DIR STRINGS.json IDS.json   triax's ids (one list per string) must equal
                                                    encoder.py's from DIR/encoder.json, vocab.bpe
  bpe_reference.py tiktoken FILE FAMILY STRINGS.json IDS.json
  bpe_reference.py splits FAMILY STRINGS.json SPLITS.json
                                                    triax's pre-tokenizer pieces must equal
                                                    regex.findall's
  bpe_reference.py to-tiktoken DIR OUT              GPT-2's files as a tiktoken rank file
  bpe_reference.py to-tokenizer-json DIR OUT [FAMILY]
                                                    GPT-2's files as a Hugging Face tokenizer.json
                                                    (FAMILY llama3/qwen2: Split regex + ignore_merges)
  bpe_reference.py bench DIR TEXT                   tokens/s of this encoder on TEXT (one thread)
Exits 1 on any mismatch, printing the first few.
"""
import base64
import json
import random
import sys
import time

import regex

PATTERNS = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "llama3": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}


def bytes_to_unicode():
    """openai/gpt-2 src/encoder.py, verbatim in substance."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(2 ** 8):
        if b not in bs:
            bs.append(b)
            cs.append(2 ** 8 + n)
            n += 1
    return dict(zip(bs, [chr(n) for n in cs]))


class Gpt2Encoder:
    def __init__(self, directory):
        self.encoder = json.load(open(f"{directory}/encoder.json", encoding="utf-8"))
        merges = open(f"{directory}/vocab.bpe", encoding="utf-8").read().split("\n")[1:-1]
        self.ranks = {tuple(m.split()): i for i, m in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.pat = regex.compile(PATTERNS["gpt2"])
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            bigram = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if bigram not in self.ranks:
                break
            first, second = bigram
            new_word, i = [], 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new_word.extend(word[i:])
                    break
                new_word.extend(word[i:j])
                i = j
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
        self.cache[token] = word
        return word

    def encode(self, text):
        ids = []
        for token in regex.findall(self.pat, text):
            token = "".join(self.byte_encoder[b] for b in token.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(token))
        return ids


class TiktokenEncoder:
    def __init__(self, path, family):
        self.ranks = {}
        for line in open(path, "rb"):
            if line.strip():
                token, rank = line.split()
                self.ranks[base64.b64decode(token)] = int(rank)
        self.pat = regex.compile(PATTERNS[family])

    def merge(self, piece):
        if piece in self.ranks:
            return [self.ranks[piece]]
        parts = [piece[i:i + 1] for i in range(len(piece))]
        while len(parts) > 1:
            best, at = None, -1
            for i in range(len(parts) - 1):
                r = self.ranks.get(parts[i] + parts[i + 1])
                if r is not None and (best is None or r < best):
                    best, at = r, i
            if best is None:
                break
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        return [self.ranks[p] for p in parts]

    def encode(self, text):
        ids = []
        for piece in regex.findall(self.pat, text):
            ids.extend(self.merge(piece.encode("utf-8")))
        return ids


def random_strings(n, seed):
    rng = random.Random(seed)
    alphabet = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") * 3
                + list("0123456789") * 3 + list(" " * 20) + list("\t\n\r") * 2
                + list(".,;:!?-_()[]{}\"'`/\\@#$%^&*+=<>|~")
                + list("éèêàçñöüßøåÆŒ") + list("日本語中文한국어") + list("абвгдежзийк")
                + ["\u00a0", "\u2003", "\u3000", "\u200b", "\u0301", "’", "“", "”", "…"]
                + ["😀", "🚀", "👍🏽", "🇫🇷"] + ["١٢٣", "٤", "Ⅻ", "½", "²"])
    pieces = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "  ", "\n\n", " \n", "123",
              "2024", "<|endoftext|>"]
    out = []
    for _ in range(n):
        length = rng.randint(0, 40)
        out.append("".join(rng.choice(pieces) if rng.random() < 0.15 else rng.choice(alphabet)
                           for _ in range(length)))
    return out


def compare(strings, got, want_of, label):
    bad = [(s, g, want_of(s)) for s, g in zip(strings, got) if g != want_of(s)]
    print(f"{label}: {len(strings)} strings, {len(bad)} differ")
    for s, g, w in bad[:5]:
        print(f"  {s!r}: triax {g}, reference {w}")
    return 1 if bad or len(strings) != len(got) else 0


def main(argv):
    mode = argv[0]
    if mode == "random":
        json.dump(random_strings(int(argv[1]), int(argv[2])), open(argv[3], "w"))
        return 0
    if mode == "gpt2":
        enc = Gpt2Encoder(argv[1])
        strings, got = json.load(open(argv[2])), json.load(open(argv[3]))
        return compare(strings, got, enc.encode, "GPT-2 byte-level BPE vs encoder.py")
    if mode == "tiktoken":
        enc = TiktokenEncoder(argv[1], argv[2])
        strings, got = json.load(open(argv[3])), json.load(open(argv[4]))
        return compare(strings, got, enc.encode, f"tiktoken ({argv[2]} pattern) vs byte_pair_merge")
    if mode == "splits":
        pat = regex.compile(PATTERNS[argv[1]])
        strings, got = json.load(open(argv[2])), json.load(open(argv[3]))
        return compare(strings, got, lambda s: regex.findall(pat, s), f"{argv[1]} pre-tokenizer")
    if mode == "to-tiktoken":
        enc = json.load(open(f"{argv[1]}/encoder.json", encoding="utf-8"))
        decoder = {v: k for k, v in bytes_to_unicode().items()}
        with open(argv[2], "w") as f:
            for token, rank in sorted(enc.items(), key=lambda kv: kv[1]):
                if token == "<|endoftext|>":
                    continue
                raw = bytes(decoder[c] for c in token)
                f.write(f"{base64.b64encode(raw).decode()} {rank}\n")
        return 0
    if mode == "to-tokenizer-json":
        # GPT-2's files in Hugging Face tokenizers' format; with a family other than gpt2, the
        # Llama 3 layout: a Split pre-tokenizer with the family's regex and ignore_merges.
        family = argv[3] if len(argv) > 3 else "gpt2"
        enc = json.load(open(f"{argv[1]}/encoder.json", encoding="utf-8"))
        merges = open(f"{argv[1]}/vocab.bpe", encoding="utf-8").read().split("\n")[1:-1]
        byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                      "use_regex": family == "gpt2"}
        pre = byte_level if family == "gpt2" else {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": PATTERNS[family]}, "behavior": "Isolated",
             "invert": False}, byte_level]}
        vocab = {k: v for k, v in enc.items() if k != "<|endoftext|>"}
        doc = {"version": "1.0", "added_tokens": [{"id": 50256, "content": "<|endoftext|>",
                                                   "special": True}],
               "normalizer": None, "pre_tokenizer": pre, "post_processor": None,
               "decoder": {"type": "ByteLevel"},
               "model": {"type": "BPE", "dropout": None, "unk_token": None,
                         "ignore_merges": family != "gpt2", "vocab": vocab,
                         "merges": merges if family == "gpt2" else [m.split(" ") for m in merges]}}
        json.dump(doc, open(argv[2], "w"), ensure_ascii=False)
        return 0
    if mode == "bench":
        enc = Gpt2Encoder(argv[1])
        text = open(argv[2], encoding="utf-8", errors="replace").read()
        blocks, begin = [], 0  # ~4 KiB at line ends, as triax prepare-data cuts the text
        while begin < len(text):
            end = min(len(text), begin + 4096)
            newline = text.find("\n", end)
            end = end if end == len(text) else (len(text) if newline < 0 else newline + 1)
            blocks.append(text[begin:end])
            begin = end
        start = time.perf_counter()
        n = sum(len(enc.encode(block)) for block in blocks)
        seconds = time.perf_counter() - start
        print(f"python encoder.py: {n} tokens in {seconds:.2f} s: {n / seconds:.0f} tokens/s")
        return 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
