package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand: one file per command holds its value.
type command struct {
	name    string
	summary string
	// usage is the text after "usage: dshmem [--root DIR] ", then a
	// blank line and the explanation that --help prints.
	usage string
	run   func(ctx context.Context, env *cliEnv, args []string) error
}

// cliEnv is what every command receives: the resolved root and the
// standard streams, so tests can run commands in-process.
type cliEnv struct {
	root     string
	rootFlag string // --root as given ("" when absent), for rules that depend on it
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
}

// exitError carries an exit code without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a mistake in the command line: exit 2 with a hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses the global flags, finds the command and runs it. It
// returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dshmem", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	root := fs.String("root", "", "memory root directory")
	showVersion := fs.Bool("version", false, "print the version")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printTopUsage(stdout)
			return 0
		}
		// The only option before COMMAND is --root; a command's own
		// options (--json, --limit, …) go after it.
		fmt.Fprintf(stderr, "dshmem: %v\n", err)
		fmt.Fprintf(stderr, "usage: dshmem [--root DIR] COMMAND [ARGS]: only --root goes before COMMAND, the command's options after it.\n")
		fmt.Fprintf(stderr, "Run 'dshmem --help' for the list of commands.\n")
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, versionLine())
		return 0
	}
	rest := fs.Args()
	if len(rest) == 0 {
		printTopUsage(stderr)
		return 2
	}
	name := rest[0]
	if name == "help" {
		if len(rest) > 1 && commands[rest[1]] != nil {
			// "help CMD" prints exactly what "CMD --help" prints.
			return run(ctx, slices.Concat(args[:len(args)-len(rest)], []string{rest[1], "--help"}), stdin, stdout, stderr)
		}
		printTopUsage(stdout)
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "dshmem: unknown command %q\n", name)
		if s := closest(name); s != "" {
			fmt.Fprintf(stderr, "Did you mean %q?\n", s)
		}
		fmt.Fprintf(stderr, "Run 'dshmem --help' for the list of commands.\n")
		return 2
	}
	env := &cliEnv{root: resolveRoot(*root), rootFlag: *root, stdin: stdin, stdout: stdout, stderr: stderr}
	if printsStoredText[name] {
		env.stdout = termSafe(stdout)
	}
	err := c.run(ctx, env, rest[1:])
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		printCommandUsage(stdout, c)
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "dshmem %s: %s\n", c.name, ue.msg)
		fmt.Fprintf(stderr, "usage: dshmem [--root DIR] %s\n", usageLine(c, rest[1:]))
		fmt.Fprintf(stderr, "Run 'dshmem %s --help' for details.\n", c.name)
		return 2
	default:
		// A package named like the command (backup, replay, scrub) starts
		// its errors with that name: say it once.
		msg := strings.TrimPrefix(err.Error(), c.name+": ")
		fmt.Fprintf(stderr, "dshmem %s: %s\n", c.name, msg)
		return 1
	}
}

// resolveRoot applies the documented order: --root, $DSH_MEMORY_ROOT,
// $DSH_HOME/memory, ~/.dsh/memory.
func resolveRoot(flagRoot string) string {
	if flagRoot != "" {
		return flagRoot
	}
	if r := os.Getenv("DSH_MEMORY_ROOT"); r != "" {
		return r
	}
	if h := os.Getenv("DSH_HOME"); h != "" {
		return filepath.Join(h, "memory")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".dsh", "memory")
	}
	return filepath.Join(".dsh", "memory")
}

// newFlags returns a flag set for a command whose -h/--help and errors
// come back to run() instead of printing on their own.
func newFlags(c *command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args, allowing flags after positional arguments
// ("dshmem search foo --limit 3"), and turns flag errors into usage
// errors. On -h/--help it prints the command's usage with its options
// to stdout and returns exitError{0}.
func (env *cliEnv) parseFlags(c *command, fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printCommandUsage(env.stdout, c)
				printOptions(env.stdout, fs)
				return nil, exitError{0}
			}
			msg := err.Error()
			if strings.HasSuffix(msg, "not defined: -root") {
				msg += fmt.Sprintf(" (--root goes before the command: dshmem --root DIR %s …)", c.name)
			}
			return nil, usageError{msg}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseNoArgs is parseFlags for a command that takes options only.
func (env *cliEnv) parseNoArgs(c *command, fs *flag.FlagSet, args []string) error {
	pos, err := env.parseFlags(c, fs, args)
	if err == nil && len(pos) > 0 {
		err = usageError{fmt.Sprintf("takes no arguments, got %q", strings.Join(pos, " "))}
	}
	return err
}

// parseText is parseFlags for a command whose arguments are one text (a
// QUERY, a TEXT): they are joined with spaces and must not be blank.
func (env *cliEnv) parseText(c *command, fs *flag.FlagSet, args []string, what string) (string, error) {
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return "", err
	}
	text := strings.TrimSpace(strings.Join(pos, " "))
	if text == "" {
		return "", usageError{"needs " + what}
	}
	return text, nil
}

// parseEntryID is parseFlags for a command about one memory entry.
func (env *cliEnv) parseEntryID(c *command, fs *flag.FlagSet, args []string) (string, error) {
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return "", usageError{"needs exactly one entry ID (m-…, as 'dshmem entries' lists them)"}
	}
	return strings.TrimSpace(pos[0]), nil
}

// flagSet reports whether the command line gave flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// printOptions lists a command's flags with their defaults.
func printOptions(w io.Writer, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "Options:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func printTopUsage(w io.Writer) {
	fmt.Fprint(w, `dshmem — long-term memory for LLM coding agents.

Every event is appended to zstd-framed JSONL logs (the only source of truth);
a SQLite index and Markdown files are projections that can be rebuilt.

usage: dshmem [--root DIR] COMMAND [ARGS]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	fmt.Fprint(w, `
The root is --root, else $DSH_MEMORY_ROOT, else $DSH_HOME/memory, else ~/.dsh/memory.
Run 'dshmem COMMAND --help' for a command's options. Start with 'dshmem demo'.
'dshmem --version' prints the version.
`)
}

// usageLine is the line of c's usage for a mistake in args: the line of
// the subcommand args name first ('scopes purge', 'backup verify'), else
// the first line.
func usageLine(c *command, args []string) string {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		prefix := "dshmem " + c.name + " " + args[0] + " "
		for _, l := range strings.Split(c.usage, "\n")[1:] {
			l = strings.TrimSpace(l)
			if l == "" {
				break // the first paragraph holds the usage lines
			}
			if strings.HasPrefix(l+" ", prefix) {
				return strings.TrimPrefix(l, "dshmem ")
			}
		}
	}
	return firstLine(c.usage)
}

func printCommandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: dshmem [--root DIR] %s\n", strings.TrimRight(c.usage, "\n"))
	fmt.Fprintln(w)
}

// closest suggests a command for a typo: the one at the smallest edit
// distance (a swap of two neighbours counts as one edit), if that is at
// most 2, else the one sharing the longest prefix, or none.
func closest(name string) string {
	best, bestD := "", 3
	for n := range commands {
		if d := editDistance(name, n); d < bestD || (d == bestD && best != "" && n < best) {
			best, bestD = n, d
		}
	}
	if best != "" {
		return best
	}
	bestLen := 1
	for n := range commands {
		l := 0
		for l < len(n) && l < len(name) && n[l] == name[l] {
			l++
		}
		if l > bestLen || (l == bestLen && best != "" && n < best) {
			best, bestLen = n, l
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
