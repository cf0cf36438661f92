#!/usr/bin/python3
"""usage: tools/code_stats.py [OLD_REV] [NEW_REV] [--top N]

Lines of C++ (.h and .cpp) per top-level folder at two git revisions (default: HEAD~1 and the
working tree's HEAD), and the N largest functions (default 10) at the newer one, for reviews of
a restructuring: where the code went, and which functions outgrew a screen.
A function is a definition that starts in column 0 and ends at the next "}" in column 0 (the
project's clang-format puts both there); lambdas and in-class bodies count towards their
enclosing function or class."""
import collections
import re
import subprocess
import sys


def git(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def sources(rev):
    files = [f for f in git("ls-tree", "-r", "--name-only", rev).split()
             if f.endswith((".h", ".cpp"))]
    return {f: git("show", f"{rev}:{f}") for f in files}


def per_folder(files):
    lines = collections.Counter()
    for path, text in files.items():
        folder = path.split("/")[0] if "/" in path else "."
        lines[folder] += text.count("\n")
    return lines


SIGNATURE = re.compile(r"^(?:[A-Za-z_][\w:<>,\s\*&]*?\s)?([A-Za-z_~][\w~]*(?:::[\w~]+)*)\s*\(")


def functions(files):
    found = []
    for path, text in files.items():
        if not path.endswith(".cpp"):
            continue
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            match = SIGNATURE.match(lines[i])
            if match and not lines[i].startswith(("namespace", "class", "struct", "#", "using")):
                start = i
                while (i < len(lines) and not lines[i].rstrip().endswith("{") and ";" not in lines[i]
                       and "{}" not in lines[i]):
                    i += 1
                if i < len(lines) and lines[i].rstrip().endswith("{") and "{}" not in lines[i]:
                    end = i
                    while end < len(lines) and lines[end] != "}":
                        end += 1
                    found.append((end - start + 1, f"{path}:{start + 1}", match.group(1)))
                    i = end
            i += 1
    return sorted(found, reverse=True)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 10
    args = [a for a in args if a != str(top)]
    old_rev = args[0] if len(args) > 0 else "HEAD~1"
    new_rev = args[1] if len(args) > 1 else "HEAD"
    old, new = sources(old_rev), sources(new_rev)
    before, after = per_folder(old), per_folder(new)
    print(f"{'folder':<12} {old_rev:>12} {new_rev:>12} {'change':>8}")
    for folder in sorted(set(before) | set(after)):
        print(f"{folder:<12} {before[folder]:>12} {after[folder]:>12} "
              f"{after[folder] - before[folder]:>+8}")
    print(f"{'total':<12} {sum(before.values()):>12} {sum(after.values()):>12} "
          f"{sum(after.values()) - sum(before.values()):>+8}")
    for rev, files in ((old_rev, old), (new_rev, new)):
        print(f"\nlargest functions at {rev}:")
        for length, where, name in functions(files)[:top]:
            print(f"  {length:>4} lines  {name}  ({where})")


if __name__ == "__main__":
    main()
