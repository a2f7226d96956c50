package bytesize

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"524288000", 524288000},
		{"1", 1},
		{" 42 ", 42},
		{"42B", 42},
		{"500MB", 500_000_000},
		{"500mb", 500_000_000},
		{"500M", 500 << 20},
		{"500m", 500 << 20},
		{"500MiB", 500 << 20},
		{"500Mi", 500 << 20},
		{"500 MiB", 500 << 20},
		{"1.5GiB", 3 << 29},
		{"1.5GB", 1_500_000_000},
		{"2g", 2 << 30},
		{"4G", 4 << 30},
		{"64k", 64 << 10},
		{"1KB", 1000},
		{"1.0001KB", 1001}, // 1000.1 bytes, rounded up
		{"0.5K", 512},
		{"3T", 3 << 40},
		{"2TB", 2e12},
		{"9223372036854775807", math.MaxInt64},
		{"8388607.99TiB", 9223372025859659531}, // (8388607 + 0.99) × 2^40, rounded up
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ in, says string }{
		{"", "not a size"},
		{"abc", "not a size"},
		{"MB", "not a size"},
		{"-5", "negative"},
		{"-1GiB", "negative"},
		{"0", "zero"},
		{"0MB", "zero"},
		{"0.0G", "zero"},
		{"1.5", "whole number of bytes"},
		{"1.5B", "whole number of bytes"},
		{"5XB", "unknown unit"},
		{"5 bits", "unknown unit"},
		{"1e9", "not a size"},
		{"1,000", "not a size"},
		{"0x10", "not a size"},
		{".5G", "not a size"},
		{"5.G", "not a size"},
		{"9223372036854775808", "too large"},
		{"8388608TiB", "too large"},
		{"99999999999999999999TB", "too large"},
	} {
		n, err := Parse(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%q) = %d, %v; want an error saying %q", c.in, n, err, c.says)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{1, "1B"},
		{900, "900B"},
		{1023, "1023B"},
		{1 << 10, "1KiB"},
		{64 << 10, "64KiB"},
		{65537, "64.1KiB"}, // 64.0009… rounded up
		{9<<10 + 1, "9.01KiB"},
		{500 << 20, "500MiB"},
		{524288001, "501MiB"},
		{3 << 29, "1.5GiB"},
		{4 << 30, "4GiB"},
		{4<<30 + 1, "4.01GiB"},
		{1<<20 - 1, "1024KiB"}, // 1023.999 KiB, rounded up
		{5 << 40, "5TiB"},
	} {
		if got := Format(c.n); got != c.want {
			t.Errorf("Format(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// What Format prints, Parse reads back as the same size or a little more,
// never less: a hint that suggests it is enough.
func TestFormatRoundsUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(n int64) {
		s := Format(n)
		got, err := Parse(s)
		if err != nil || got < n || got > n+n/100+1 {
			t.Fatalf("Parse(Format(%d) = %q) = %d, %v; want %d to %d", n, s, got, err, n, n+n/100+1)
		}
	}
	for shift := range 53 {
		for _, d := range []int64{-1, 0, 1} {
			if n := int64(1)<<shift + d; n > 0 {
				check(n)
			}
		}
	}
	for range 100_000 {
		check(1 + rng.Int64N(1<<(1+rng.IntN(52))))
	}
}

func TestExact(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{1, "1"},
		{70001, "70001"},
		{64 << 10, "64KiB"},
		{1000, "1KB"},
		{524288000, "500MiB"},
		{500_000_000, "500MB"},
		{3 << 29, "1536MiB"},
		{4 << 30, "4GiB"},
		{2e12, "2TB"},
	} {
		got := Exact(c.n)
		if got != c.want {
			t.Errorf("Exact(%d) = %q, want %q", c.n, got, c.want)
		}
		if back, err := Parse(got); err != nil || back != c.n {
			t.Errorf("Parse(Exact(%d) = %q) = %d, %v", c.n, got, back, err)
		}
	}
}
