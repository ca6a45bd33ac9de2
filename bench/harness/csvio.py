"""What the binaries print (metadata lines, then CSV) and the CSVs run.py writes."""
import csv
import io


def parse_output(text, cols):
    """'#' lines are metadata; the first other line is the CSV header."""
    meta = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("#")]
    body = "\n".join(ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))
    reader = csv.DictReader(io.StringIO(body))
    if reader.fieldnames != cols:
        return meta, [], f"unexpected CSV header {reader.fieldnames}, expected {cols}"
    rows = list(reader)
    for r in rows:
        for c in cols:
            if c == "system":
                continue
            try:
                float(r[c])
            except (TypeError, ValueError):
                return meta, [], f"malformed value {c}={r[c]!r}"
    return meta, rows, None


def write_csv(path, cols, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r[c] for c in cols})


def split_meta(m):
    """Splits 'a=1 b="x y"' into ['a=1', 'b="x y"']."""
    out, cur, q = [], "", False
    for ch in m:
        if ch == '"':
            q = not q
        if ch == " " and not q:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def meta_fields(m):
    """A metadata line's key=value pairs, as a dict."""
    return dict(kv.split("=", 1) for kv in split_meta(m) if "=" in kv)
