// Package commands holds calib's commands without a command-line parser:
// each command is its flags (registered on a pflag.FlagSet from the
// option declarations of the library package it calls, where it has
// them: evaluate, calibtest, bandwidth, recal) and its run, a thin layer
// over that package. Package cli gives them cobra's parsing and help. The
// C ABI (cmd/calib/libcalib) calls the same packages with the same
// declarations, so names, defaults, checks and messages cannot drift
// between the two.
package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/cmd/calib/internal/inputerr"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/optionspec"
)

// Exit statuses.
const (
	ExitOK          = 0
	ExitFailure     = 1   // any other failure
	ExitInput       = 2   // bad input data or bad usage
	ExitInterrupted = 130 // stopped by Ctrl-C (SIGINT) or a cancelled context: 128 + SIGINT, as shells report it
)

// PositionalArgs checks a command's positional arguments.
type PositionalArgs func(cmd *Command, args []string) error

// A Command is one calib command: its use line ("eval PRED"), its one-line
// summary, its flags, its subcommands (calib experiment's) and its run.
// The methods that a run reads (Context, Flags, OutOrStdout, ErrOrStderr,
// CommandPath) are valid during Run. A Command runs once (its flags and
// what it parsed from them are its state): build another with New.
type Command struct {
	use, short string
	args       PositionalArgs // nil: any
	run        func(cmd *Command, args []string) error
	flags      *pflag.FlagSet
	subs       []*Command
	parent     *Command

	// Set by Run for the run's length.
	ctx            context.Context
	stdout, stderr io.Writer
	runArgs        []string
	ran            bool
}

// command returns the command use whose body is run (nil: a command that
// only groups subcommands), with positional arguments checked by args.
func command(use, short string, args PositionalArgs, run func(cmd *Command, args []string) error) *Command {
	return &Command{use: use, short: short, args: args, run: run, flags: pflag.NewFlagSet(strings.Fields(use)[0], pflag.ContinueOnError)}
}

// addCommand adds subcommands to c.
func (c *Command) addCommand(subs ...*Command) {
	for _, s := range subs {
		s.parent = c
		c.subs = append(c.subs, s)
	}
}

// constructors builds each calib command by its name, in the order of
// calib's help (TestConstructorNames checks the names).
var constructors = []struct {
	name string
	make func() *Command
}{
	{"eval", newEvalCmd}, {"bandwidth", newBandwidthCmd}, {"demo", newDemoCmd}, {"fit", newFitCmd},
	{"apply", newApplyCmd}, {"compare", newCompareCmd}, {"report", newReportCmd}, {"plot", newPlotCmd},
	{"experiment", newExperimentCmd}, {"train", newTrainCmd}, {"test", newTestCmd}, {"serve", newServeCmd},
}

// New returns a new command named name (eval, test, fit...), with its
// flags at their defaults, or nil if calib has no such command. Only that
// command is built (a C ABI call builds one per call).
func New(name string) *Command {
	for _, c := range constructors {
		if c.name == name {
			return c.make()
		}
	}
	return nil
}

// All returns a new instance of every calib command, in the order of
// calib's help.
func All() []*Command {
	cs := make([]*Command, len(constructors))
	for i, c := range constructors {
		cs[i] = c.make()
	}
	return cs
}

// Use returns the command's use line, its name first ("eval PRED").
func (c *Command) Use() string { return c.use }

// Short returns the command's one-line summary.
func (c *Command) Short() string { return c.short }

// Name returns the command's name, the first word of its use line.
func (c *Command) Name() string { return strings.Fields(c.use)[0] }

// CommandPath returns "calib" and the names down to c ("calib experiment
// alarm").
func (c *Command) CommandPath() string {
	if c.parent == nil {
		return "calib " + c.Name()
	}
	return c.parent.CommandPath() + " " + c.Name()
}

// UseLine returns the use line after "calib" and the parents' names,
// with "[flags]" (as cobra writes it: "calib eval PRED [flags]").
func (c *Command) UseLine() string {
	return strings.TrimSuffix(c.CommandPath(), c.Name()) + c.use + " [flags]"
}

// Flags returns the command's flags: its option table.
func (c *Command) Flags() *pflag.FlagSet { return c.flags }

// Commands returns the subcommands.
func (c *Command) Commands() []*Command { return c.subs }

// Runnable reports whether the command runs (a command that only groups
// subcommands does not).
func (c *Command) Runnable() bool { return c.run != nil }

// Context returns the context of the current run.
func (c *Command) Context() context.Context { return c.ctx }

// OutOrStdout returns where the current run writes its result.
func (c *Command) OutOrStdout() io.Writer { return c.stdout }

// ErrOrStderr returns where the current run writes progress and notes.
func (c *Command) ErrOrStderr() io.Writer { return c.stderr }

// Args returns the positional arguments of the current run.
func (c *Command) Args() []string { return c.runArgs }

// CheckArgs checks the positional arguments as the command takes them.
func (c *Command) CheckArgs(args []string) error {
	if c.args == nil {
		return nil
	}
	return c.args(c, args)
}

// Input is where a run writes besides its files.
type Input struct {
	Stdout, Stderr io.Writer // the result; progress and notes (nil: discarded)
}

// Run checks the positional arguments args and the flags that were set
// (their ranges, before any data is read) and runs the command on args.
// Its error is the one-line message calib prints; Code gives its exit
// status. A second Run of the same Command is refused.
func (c *Command) Run(ctx context.Context, args []string, in Input) error {
	switch {
	case c.run == nil:
		return fmt.Errorf("%s: name a subcommand", c.CommandPath())
	case c.ran:
		return fmt.Errorf("%s: this command has run: build another (commands.New)", c.CommandPath())
	}
	c.ran = true
	if err := c.CheckArgs(args); err != nil {
		return err
	}
	c.ctx, c.stdout, c.stderr, c.runArgs = ctx, in.Stdout, in.Stderr, args
	if c.stdout == nil {
		c.stdout = io.Discard
	}
	if c.stderr == nil {
		c.stderr = io.Discard
	}
	if err := validateFlags(c); err != nil {
		return err
	}
	return c.run(c, args)
}

// Code returns the exit status of a run that returned err in the context
// ctx, and the error to print (nil on success): an option the library
// refused is named as its flag is spelled; a cancelled context is
// "interrupted".
func Code(ctx context.Context, err error) (int, error) {
	if err != nil && (errors.As(err, new(*evaluate.OptionError)) || errors.As(err, new(*optionspec.Error)) || errors.Is(err, calibtest.ErrTooSlow)) {
		err = usageErrorf("%s", inputerr.Message(err))
	}
	switch {
	case ctx.Err() != nil:
		return ExitInterrupted, fmt.Errorf("interrupted: %w", ctx.Err())
	case err == nil:
		return ExitOK, nil
	case isInputError(err):
		return ExitInput, err
	}
	return ExitFailure, err
}

// exactArgs requires n positional arguments (an input error).
func exactArgs(n int) PositionalArgs {
	return func(cmd *Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %d argument(s), got %d; usage: %s", cmd.Name(), n, len(args), cmd.UseLine())
		}
		return nil
	}
}

// maximumArgs allows at most n positional arguments.
func maximumArgs(n int) PositionalArgs {
	return func(_ *Command, args []string) error {
		if len(args) > n {
			return fmt.Errorf("accepts at most %d arg(s), received %d", n, len(args))
		}
		return nil
	}
}
