package evaluate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/data"
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

// Ranks lists the r >= 1 of the KS top-r errors (Options.KS.R). Its text
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

// NotionSet lists the ECE^KDE notions of ece_kde and sharpness
// (Options.Mode). The zero value (no notion named: Notions nil or empty)
// means all the notions that apply (Resolve): canonical, class_wise and
// top_label when K <= 20; canonical and top_label above (class_wise costs
// K times canonical); binary and top_label for one-column input. All says "all" explicitly (for a caller
// whose zero value means something else: report.Options.Eval.Mode's zero
// value is canonical and top_label), Notions names notions besides, e.g.
// NotionSet{All: true, Notions: []kde.Notion{kde.ClassWise}} above K = 20.
// Its text form is "all" and the names, comma-separated ("toplabel" and
// "top-label" name top_label; surrounding spaces and empty items
// ignored); "" is the zero value. The earlier spelling "marginal" reads as
// class_wise (package notion).
type NotionSet struct {
	All     bool
	Notions []kde.Notion
}

// IsZero reports whether ns is the zero value: no notion named, all that
// apply.
func (ns NotionSet) IsZero() bool { return !ns.All && len(ns.Notions) == 0 }

// asksAll reports whether ns asks for all the notions that apply: All, or
// the zero value.
func (ns NotionSet) asksAll() bool { return ns.All || len(ns.Notions) == 0 }

// Has reports whether ns names n itself (not through All).
func (ns NotionSet) Has(n kde.Notion) bool { return slices.Contains(ns.Notions, n) }

// String returns "all" (for All, or the zero value), then the names,
// comma-separated.
func (ns NotionSet) String() string {
	var names []string
	if ns.asksAll() {
		names = append(names, "all")
	}
	for _, n := range ns.Notions {
		names = append(names, n.String())
	}
	return strings.Join(names, ",")
}

// MarshalText implements encoding.TextMarshaler.
func (ns NotionSet) MarshalText() ([]byte, error) { return []byte(ns.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: "" gives the zero
// value, "all" sets All, each other name is added to Notions once. Its
// errors are OptionErrors of "mode": `mode: unknown notion "x" (valid:
// canonical, class_wise, top_label, binary) (or all)`.
func (ns *NotionSet) UnmarshalText(b []byte) error {
	var out NotionSet
	empty := true
	for _, f := range strings.Split(string(b), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		empty = false
		if f == "all" {
			out.All = true
			continue
		}
		n, err := kde.ParseNotion(f)
		if err != nil {
			return optionError("mode", "mode: %v (or all)", err)
		}
		if !out.Has(n) {
			out.Notions = append(out.Notions, n)
		}
	}
	if empty && strings.TrimSpace(string(b)) != "" {
		return optionError("mode", "mode: no notion given")
	}
	*ns = out
	return nil
}

// Resolve returns the notions of ns for the set s, with a note saying what
// "all" meant there (see NotionSet): All's first, then the named ones not
// among them, each once. With s nil (before the data is read) "all" counts
// as canonical. The binary notion needs one-column input: its
// error is an OptionError of "mode".
func (ns NotionSet) Resolve(s *data.Set) (notions []kde.Notion, note string, err error) {
	if ns.asksAll() {
		switch {
		case s == nil:
			notions = append(notions, kde.Canonical)
		case s.Binary:
			notions = append(notions, kde.Binary, kde.TopLabel)
			note = "all = binary, top_label (one-column input)"
		case s.K <= 20:
			notions = append(notions, kde.Canonical, kde.ClassWise, kde.TopLabel)
			note = "all = canonical, class_wise, top_label (K <= 20)"
		default:
			notions = append(notions, kde.Canonical, kde.TopLabel)
			note = fmt.Sprintf("all = canonical, top_label (K = %d > 20; ask for class_wise with --mode class_wise)", s.K)
		}
	}
	for _, n := range ns.Notions {
		if !slices.Contains(kde.Notions(), n) {
			return nil, "", optionError("mode", "mode: unknown notion %q", n)
		}
		if n == kde.Binary && s != nil && !s.Binary {
			return nil, "", optionError("mode", "mode: the binary notion needs one-column input (p1 or one logit); for K = %d use canonical", s.K)
		}
		if !slices.Contains(notions, n) {
			notions = append(notions, n)
		}
	}
	return notions, note, nil
}
