package optionspec

import "strconv"

// FlagSet is what Register needs of a flag set: *flag.FlagSet and
// *pflag.FlagSet both have these methods.
type FlagSet interface {
	StringVar(p *string, name, value, usage string)
	IntVar(p *int, name string, value int, usage string)
	Uint64Var(p *uint64, name string, value uint64, usage string)
	BoolVar(p *bool, name string, value bool, usage string)
	Float64Var(p *float64, name string, value float64, usage string)
}

// Flags are the variables of the flags Register defined, one per option,
// of its kind.
type Flags struct {
	values []*Value
}

// Value is one option's flag variable.
type Value struct {
	Option
	s string
	b bool
	i int
	u uint64
	x float64
}

// Text returns the variable's value as the option's text.
func (v *Value) Text() string {
	switch v.Kind {
	case Bool:
		return strconv.FormatBool(v.b)
	case Int:
		return strconv.Itoa(v.i)
	case Uint64:
		return strconv.FormatUint(v.u, 10)
	case Float:
		return strconv.FormatFloat(v.x, 'g', -1, 64)
	}
	return v.s
}

// Register defines on fs a flag of each option, of its kind, with its
// default and usage, and returns their variables. A default that does not
// parse as the kind's value reads as its zero value (the packages' tests
// parse every default).
func Register(fs FlagSet, opts []Option) *Flags {
	f := &Flags{}
	for _, o := range opts {
		f.values = append(f.values, RegisterOne(fs, o, o.Usage))
	}
	return f
}

// RegisterOne defines the flag of one option with the usage text usage,
// and returns its variable.
func RegisterOne(fs FlagSet, o Option, usage string) *Value {
	v := &Value{Option: o}
	switch o.Kind {
	case Bool:
		def, _ := strconv.ParseBool(o.Default)
		fs.BoolVar(&v.b, o.Name, def, usage)
	case Int:
		def, _ := strconv.Atoi(o.Default)
		fs.IntVar(&v.i, o.Name, def, usage)
	case Uint64:
		def, _ := strconv.ParseUint(o.Default, 10, 64)
		fs.Uint64Var(&v.u, o.Name, def, usage)
	case Float:
		def, _ := strconv.ParseFloat(o.Default, 64)
		fs.Float64Var(&v.x, o.Name, def, usage)
	default:
		fs.StringVar(&v.s, o.Name, o.Default, usage)
	}
	return v
}

// Given returns the text of each flag that changed reports as given,
// keyed by option name: what a package's Parse function takes.
func (f *Flags) Given(changed func(name string) bool) map[string]string {
	text := map[string]string{}
	for _, v := range f.values {
		if changed(v.Name) {
			text[v.Name] = v.Text()
		}
	}
	return text
}
