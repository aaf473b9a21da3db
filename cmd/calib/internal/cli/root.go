// Package cli is the calib command line: cobra's parsing, help and
// subcommand tree over the commands of package commands, which hold each
// command's flags and run.
package cli

import (
	"context"
	"embed"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/cmd/calib/internal/commands"
	"github.com/calib-dev/calib/data"
)

// Exit statuses: commands'.
const (
	ExitOK          = commands.ExitOK
	ExitFailure     = commands.ExitFailure
	ExitInput       = commands.ExitInput
	ExitInterrupted = commands.ExitInterrupted
)

// NewRoot returns the calib command with its subcommands.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "calib",
		Short:         "Measure and fix the calibration of probabilistic classifiers",
		Long:          help("calib"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       data.Version(),
	}
	root.SetVersionTemplate("calib {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return commands.InputError(commands.FlagError(err)) })
	for _, c := range commands.All() {
		root.AddCommand(cobraCommand(c))
	}
	return root
}

// cobraCommand is c as a cobra command: its help from help/NAME.txt and
// help/NAME.example.txt, its flags (the same *pflag.Flag values, so that
// cobra's parsing sets c's options) and its subcommands. The positional
// arguments, then every flag, are checked before a command reads any data
// (commands.Command.Run).
func cobraCommand(c *commands.Command) *cobra.Command {
	cc := &cobra.Command{Use: c.Use(), Short: c.Short(), Long: help(c.Name()), Example: help(c.Name() + ".example")}
	if c.Runnable() {
		cc.RunE = func(cc *cobra.Command, args []string) error {
			return c.Run(cc.Context(), args, commands.Input{Stdout: cc.OutOrStdout(), Stderr: cc.ErrOrStderr()})
		}
	}
	cc.Flags().AddFlagSet(c.Flags())
	for _, s := range c.Commands() {
		cc.AddCommand(cobraCommand(s))
	}
	return cc
}

// Main runs calib with the arguments args (without the program name) and
// returns the exit status; errors are printed to stderr on one line.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	code, err := Exec(ctx, args, stdout, stderr)
	switch {
	case code == ExitInterrupted:
		// Interrupted: whatever the command returned, nothing more is
		// printed (outputs are written atomically, so none is partial).
		fmt.Fprintln(stderr, "calib: interrupted")
	case err != nil:
		fmt.Fprintf(stderr, "calib: %s\n", commands.OneLine(err.Error()))
	}
	return code
}

// Exec runs the calib command line args (without the program name), as
// Main does, and returns the exit status and the error (nil on success;
// its message is the one line Main prints). A command's output goes to
// stdout; progress and notes to stderr.
func Exec(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return commands.Code(ctx, root.ExecuteContext(ctx))
}

// helpFiles holds the long help of every command, help/NAME.txt, and its
// examples, help/NAME.example.txt, so that the command files hold flags
// and the calls they make.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help returns the text help/NAME.txt without its final newline ("" when
// there is none: TestEveryCommandHasHelp checks the long help).
func help(name string) string {
	b, _ := helpFiles.ReadFile("help/" + name + ".txt")
	return strings.TrimSuffix(string(b), "\n")
}
