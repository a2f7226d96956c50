package bytesize

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// Forms says which sizes Parse reads, for help texts and hints.
const Forms = "bytes (524288000) or a number with a unit: 500MB, 500M, 1.5GiB, 2g; " +
	"KB, MB, GB, TB are powers of 1000, K, M, G, T and KiB, MiB, GiB, TiB powers of 1024"

// unitSize is the number of bytes of a lower-case unit, or 0 for no unit
// Parse reads.
func unitSize(unit string) int64 {
	switch unit {
	case "", "b":
		return 1
	case "k", "ki", "kib":
		return 1 << 10
	case "kb":
		return 1e3
	case "m", "mi", "mib":
		return 1 << 20
	case "mb":
		return 1e6
	case "g", "gi", "gib":
		return 1 << 30
	case "gb":
		return 1e9
	case "t", "ti", "tib":
		return 1 << 40
	case "tb":
		return 1e12
	}
	return 0
}

// sizePattern is a size: digits, an optional fraction, an optional unit.
const sizePattern = `^([0-9]+)(?:\.([0-9]+))?\s*([A-Za-z]*)$`

// Parse reads a size of more than zero bytes (see the package comment for
// the forms). A fraction of a byte is rounded up: "1.0001KB" is 1001 bytes.
// A number without a unit is bytes, and must be whole. Sizes of 8 EiB and
// more (past int64) are refused.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("%q is negative", s)
	}
	m := regexp.MustCompile(sizePattern).FindStringSubmatch(t)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	whole, frac, unit := m[1], m[2], strings.ToLower(m[3])
	mult := unitSize(unit)
	if mult == 0 {
		return 0, fmt.Errorf("%q has an unknown unit %q", s, m[3])
	}
	if frac != "" && mult == 1 {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	// (whole.frac) × mult, exactly, then rounded up to a whole byte.
	num, _ := new(big.Int).SetString(whole+frac, 10)
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	num.Mul(num, big.NewInt(mult))
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	switch {
	case !q.IsInt64():
		return 0, fmt.Errorf("%q is too large: a size must be under 8 EiB (8388608TiB)", s)
	case q.Sign() == 0:
		return 0, fmt.Errorf("%q is zero; a size must be more than zero", s)
	}
	return q.Int64(), nil
}

// Format writes n (more than zero) as Parse reads it, in the largest binary
// unit it fills, with three significant digits or more, rounded up:
// 524288000 is "500MiB", 4294967297 "4.01GiB", 900 "900B". Parse(Format(n))
// is never less than n, and at most 1% more (below 8388607TiB, where the
// rounding would pass what Parse takes).
func Format(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%dB", n)
	}
	unit, name := int64(1<<10), "KiB"
	for _, u := range []struct {
		n    int64
		name string
	}{{1 << 20, "MiB"}, {1 << 30, "GiB"}, {1 << 40, "TiB"}} {
		if n >= u.n {
			unit, name = u.n, u.name
		}
	}
	q, r := n/unit, n%unit
	digits, scale := 0, int64(1)
	switch {
	case q < 10:
		digits, scale = 2, 100
	case q < 100:
		digits, scale = 1, 10
	}
	// r × scale < 2^40 × 100: no overflow.
	up := (r*scale + unit - 1) / unit
	whole, frac := q+up/scale, up%scale
	if frac == 0 {
		return fmt.Sprintf("%d%s", whole, name)
	}
	f := strings.TrimRight(fmt.Sprintf("%0*d", digits, frac), "0")
	return fmt.Sprintf("%d.%s%s", whole, f, name)
}

// Exact writes n (more than zero) as Parse reads it back exactly, in the
// largest binary or decimal unit that divides it, else as bytes:
// 524288000 is "500MiB", 500000000 "500MB", 70001 "70001". It is for a
// limit a message reports, where Format's rounding would misstate it.
func Exact(n int64) string {
	for _, u := range []struct {
		n    int64
		name string
	}{{1 << 40, "TiB"}, {1e12, "TB"}, {1 << 30, "GiB"}, {1e9, "GB"}, {1 << 20, "MiB"}, {1e6, "MB"}, {1 << 10, "KiB"}, {1e3, "KB"}} {
		if n >= u.n && n%u.n == 0 {
			return fmt.Sprintf("%d%s", n/u.n, u.name)
		}
	}
	return fmt.Sprintf("%d", n)
}
