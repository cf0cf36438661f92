#!/usr/bin/python3
"""Every command the project's shell scripts call is one tools/setup.sh provides.

A minimal Debian 12 (debootstrap) has only the packages of Priority `required`; anything else a
script calls must be installed by tools/setup.sh, or the suite fails there and nowhere else (it
happened with `bc` in tests/launch/faults.sh). tools/commands.txt lists each external command
with the Debian package that gives it; this test
  1. scans every shell script (tests/, tools/, .ci/) for the commands it calls, and fails naming
     any that tools/commands.txt does not list, with the script and line;
  2. checks that each listed package is in tools/setup.sh's PACKAGES or is one of Debian 12's
     `required` packages (tools/commands.txt says which it takes as such).
tools/setup.sh checks the same list after installing (`command -v` for every command).

Usage: script_commands.py SOURCE_DIR
"""
import os
import re
import shlex
import sys

# Bash keywords and builtins: never a package's.
BUILTINS = set("""
if then else elif fi for in do done while until case esac function select time ! [[ ]] { } ( )
alias bg bind break builtin caller cd command compgen complete continue declare dirs disown echo
enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout
mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend test
times trap true type typeset ulimit umask unalias unset wait . : [
""".split())
# Words that put the next word in command position again.
PREFIXES = {"exec", "command", "builtin", "!", "then", "else", "do", "if", "elif", "while",
            "until", "time", "nohup", "env", "sudo", "nice", "setsid", "stdbuf"}
SEPARATORS = {"|", "||", "&&", ";", "&", ";;", "(", ")", "|&", "{", "}", "$(", "`"}
SCRIPT_SUFFIXES = (".sh", ".sbatch")


def shell_scripts(root):
    for top in ("tests", "tools", ".ci"):
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__",)]
            for name in sorted(files):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    head = f.readline()
                if name.endswith(SCRIPT_SUFFIXES) or re.match(rb"#!.*\b(ba)?sh\b", head):
                    yield path


def strip_heredocs(text):
    """Heredoc bodies (<<EOF ... EOF) are data for another program, not commands."""
    out, terminator = [], None
    for line in text.splitlines():
        if terminator is not None:
            if line.strip() == terminator:
                terminator = None
            out.append("")
            continue
        match = re.search(r"(?<!<)<<-?\s*['\"]?(\w+)['\"]?", line)
        if match:
            terminator = match.group(1)
        out.append(line)
    return "\n".join(out)


def code_text(text):
    """The script as one line of code: comments dropped, continuations joined, and each newline
    outside quotes made a `;` (so quoted multi-line strings, e.g. awk programs, stay one word).
    Arithmetic $((...)) is dropped."""
    out, quote, i = [], None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                out.append(text[i:i + 2])
                i += 2
                continue
            if c == quote:
                quote = None
            out.append(c)
        elif c == "\\" and text[i + 1:i + 2] == "\n":
            out.append(" ")
            i += 1
        elif c == "\\":
            out.append(text[i:i + 2])
            i += 1
        elif c in "'\"":
            quote = c
            out.append(c)
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;(|&"):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif c == "\n":
            out.append(" ; ")
        else:
            out.append(c)
        i += 1
    code = "".join(out)
    while "$((" in code:
        code = re.sub(r"\$\(\([^()]*(\([^()]*\)[^()]*)*\)\)", "0", code, count=1) \
            if re.search(r"\$\(\([^()]*(\([^()]*\)[^()]*)*\)\)", code) else code.replace("$((", "0", 1)
    return code


def split_operators(token):
    """shlex joins runs of punctuation (`);`, `()`, `||`): split them into shell operators."""
    if not token or any(c not in ";&|()" for c in token):
        return [token]
    parts = []
    while token:
        size = 2 if token[:2] in ("||", "&&", ";;", "|&") else 1
        parts.append(token[:size])
        token = token[size:]
    return parts


def commands_of(code):
    """The words in command position of code_text(script) (best effort; commands built in
    variables, run through `sh -c` strings or inside double-quoted $(...) are not seen)."""
    code = code.replace("$(", " __subst__ ( ").replace("`", " ` ")
    lexer = shlex.shlex(code, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote inside a construct we do not parse
        return []
    tokens = [part for token in tokens for part in split_operators(token)]
    found, expect, depth, in_case, resume_at, pattern_start = [], True, 0, 0, 0, 0
    for k, token in enumerate(tokens):
        if k < resume_at:  # inside an array value NAME=( ... )
            continue
        if token.endswith("=") and k + 1 < len(tokens) and tokens[k + 1] == "(":
            resume_at = tokens.index(")", k + 1) + 1 if ")" in tokens[k + 1:] else len(tokens)
            continue
        if token == "(":
            depth += 1
            expect = True
            continue
        if token == ")":
            if depth > 0:
                depth -= 1
            elif in_case:  # `a | b)` of a case: patterns, not commands
                del found[pattern_start:]
            expect = True
            continue
        if token == ";;":
            pattern_start = len(found)
        if token in SEPARATORS or token == "__subst__":
            expect = expect or token != "__subst__"
            continue
        if not expect:
            if token == "in" and in_case:
                expect = True  # the first case pattern follows
                pattern_start = len(found)
            continue
        if token == "case":
            in_case += 1
            expect = False
            found.append(None)
            continue
        if token == "esac":
            in_case = max(0, in_case - 1)
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", token):  # VAR=value prefix
            continue
        if token in PREFIXES:
            expect = True
            continue
        if token == "timeout":  # timeout [-s SIG] [-k T] DURATION CMD
            found.append(token)
            expect = "timeout"
            continue
        if expect == "timeout" and (token.startswith("-") or re.match(r"^[0-9.]+[smhd]?$", token)):
            continue
        expect = False
        found.append(token)
    return [word for word in found if word is not None]


def external(word, functions):
    if not word or word in BUILTINS or word in functions:
        return None
    if any(c in word for c in "$\"'{}*=<>") or word.startswith("-"):
        return None  # a variable, an expansion, a redirection, an option
    if "/" in word:
        if word.startswith("/"):
            return os.path.basename(word) or None  # /usr/bin/python3 -> python3
        return None  # a path inside the project (build/triax, tools/...)
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_.+-]*$", word):
        return None
    return word


def read_list(path):
    commands, required = {}, set()
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if fields[0] == "required:":
                required.update(fields[1:])
            else:
                commands[fields[0]] = fields[1]
    return commands, required


def setup_packages(path):
    text = open(path).read()
    match = re.search(r"PACKAGES=\((.*?)\)", text, re.S)
    return set(match.group(1).split())


def defined_functions(text):
    return set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)", text, re.M))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    listed, required = read_list(os.path.join(root, "tools/commands.txt"))
    installed = setup_packages(os.path.join(root, "tools/setup.sh"))
    problems, seen = [], set()
    for path in shell_scripts(root):
        text = strip_heredocs(open(path, errors="replace").read())
        functions = defined_functions(text)
        # Functions of a helper sourced from beside the script (`. "$(dirname "$0")/x.sh"`).
        for helper in re.findall(r'^\s*(?:\.|source)\s+"\$\(dirname "\$0"\)/([\w.-]+)"', text, re.M):
            helper_path = os.path.join(os.path.dirname(path), helper)
            if os.path.exists(helper_path):
                functions |= defined_functions(open(helper_path, errors="replace").read())
        if True:
            for word in commands_of(code_text(text)):
                command = external(word, functions)
                if command is None:
                    continue
                seen.add(command)
                if command not in listed:
                    rel = os.path.relpath(path, root)
                    problems.append(f"{rel}: calls `{command}`, which tools/commands.txt "
                                    "does not list (add it with the Debian package that gives "
                                    "it, and install that package in tools/setup.sh)")
    for command, package in sorted(listed.items()):
        if package not in installed and package not in required:
            problems.append(f"tools/commands.txt: `{command}` comes from {package}, which "
                            "tools/setup.sh does not install and Debian 12 does not always have "
                            "(add it to PACKAGES in tools/setup.sh)")
    print(f"{len(seen)} external commands called by the scripts; {len(listed)} listed")
    for problem in problems:
        print("FAIL: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
