package evaluate

import (
	"math"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/kde"
)

// Exponents lists exponents p in [1, kde.MaxP] (Options.P). Its text form
// is the numbers, comma-separated ("1,2"); surrounding spaces and empty
// items are ignored, and an empty list is refused.
type Exponents []float64

// String returns the exponents, comma-separated.
func (ps Exponents) String() string {
	fs := make([]string, len(ps))
	for i, p := range ps {
		fs[i] = strconv.FormatFloat(p, 'g', -1, 64)
	}
	return strings.Join(fs, ",")
}

// MarshalText implements encoding.TextMarshaler.
func (ps Exponents) MarshalText() ([]byte, error) { return []byte(ps.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. Its errors are
// OptionErrors of "p": `p "0.5": each p must be a number in [1, 32]`.
func (ps *Exponents) UnmarshalText(b []byte) error {
	var out Exponents
	for _, f := range strings.Split(string(b), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || !(p >= 1 && p <= kde.MaxP) {
			return optionError("p", "p %q: each p must be a number in [1, %d]", f, kde.MaxP)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return optionError("p", "p: no exponent given")
	}
	*ps = out
	return nil
}

// Ranks lists the r >= 1 of the KS top-r errors (Options.KSR). Its text
// form is the integers, comma-separated ("1,2"); an empty text is an
// empty, non-nil list: no top-r error.
type Ranks []int

// String returns the ranks, comma-separated.
func (rs Ranks) String() string {
	fs := make([]string, len(rs))
	for i, r := range rs {
		fs[i] = strconv.Itoa(r)
	}
	return strings.Join(fs, ",")
}

// MarshalText implements encoding.TextMarshaler.
func (rs Ranks) MarshalText() ([]byte, error) { return []byte(rs.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. Its errors are
// OptionErrors of "ks-r": `ks-r "0": each r must be an integer >= 1`.
func (rs *Ranks) UnmarshalText(b []byte) error {
	out := Ranks{}
	for _, f := range strings.Split(string(b), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		r, err := strconv.Atoi(f)
		if err != nil || r < 1 {
			return optionError("ks-r", "ks-r %q: each r must be an integer >= 1", f)
		}
		out = append(out, r)
	}
	*rs = out
	return nil
}

// Bandwidth is a kernel bandwidth h > 0, or 0: chosen from the data
// (Options.Bandwidth: per notion by the leave-one-out likelihood). Its
// text form is the number, or "auto" (any case) for 0.
type Bandwidth float64

// String returns the bandwidth, or "auto" for 0.
func (h Bandwidth) String() string {
	if h == 0 {
		return "auto"
	}
	return strconv.FormatFloat(float64(h), 'g', -1, 64)
}

// MarshalText implements encoding.TextMarshaler.
func (h Bandwidth) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: "auto" or a finite
// h > 0. Its errors are OptionErrors of "bandwidth": `bandwidth "x": want
// auto or a positive number`.
func (h *Bandwidth) UnmarshalText(b []byte) error {
	t := strings.TrimSpace(string(b))
	if strings.EqualFold(t, "auto") {
		*h = 0
		return nil
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return optionError("bandwidth", "bandwidth %q: want auto or a positive number", string(b))
	}
	*h = Bandwidth(v)
	return nil
}
