package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// version is hiercoll's release (the Python package's too).
const version = "0.1.0"

// synopses are the usage lines of commands that take more than flags.
var synopses = map[string]string{
	"launch": "launch --nproc N [--nodes K] -- command args...",
}

// errHelp: the command's usage was asked for (-h) and printed; exit status 0.
var errHelp = errors.New("help requested")

// cmdOut and cmdErr are where commands print (run sets them: tests run the
// command line in-process); -h prints a command's usage to cmdOut.
var cmdOut, cmdErr io.Writer = os.Stdout, os.Stderr

// parseFlags parses a command's flags. -h prints the usage to helpOut and
// returns errHelp. Mistakes are usageErrors naming the flag as typed: each
// flag named in positive that was given must be a positive number (a flag
// left out keeps its default; 0 does not mean "default"), and arguments
// that are not flags are refused unless takesArgs.
func parseFlags(fs *flag.FlagSet, args []string, takesArgs bool, positive ...string) error {
	fs.Usage = func() {
		synopsis := synopses[fs.Name()]
		if synopsis == "" {
			synopsis = fs.Name() + " [flags]"
		}
		flags := 0
		fs.VisitAll(func(*flag.Flag) { flags++ })
		if flags == 0 {
			fmt.Fprintf(fs.Output(), "usage: hiercoll %s\n\n%s takes no flags.\n", strings.TrimSuffix(synopsis, " [flags]"), fs.Name())
			return
		}
		fmt.Fprintf(fs.Output(), "usage: hiercoll %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	out := fs.Output()
	fs.SetOutput(io.Discard) // parse errors are reported once, by main
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(cmdOut)
		fs.Usage()
		return errHelp
	case err != nil:
		return usageError{fmt.Errorf("%v (hiercoll %s -h lists the flags)", err, fs.Name())}
	case !takesArgs && fs.NArg() > 0:
		return usageError{fmt.Errorf("unexpected argument %q (hiercoll %s -h lists the flags)", fs.Arg(0), fs.Name())}
	}
	typed := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { typed[f.Name] = true })
	for _, name := range positive {
		f := fs.Lookup(name)
		if f == nil || !typed[name] {
			continue
		}
		if !isPositive(f.Value.String()) {
			return usageError{fmt.Errorf("--%s %s: want a positive number (leave the flag out for the default)", name, f.Value)}
		}
	}
	return nil
}

// isPositive reports whether a flag's value (an integer or a duration) is
// above zero.
func isPositive(v string) bool {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n > 0
	}
	d, err := time.ParseDuration(v)
	return err == nil && d > 0
}

// versionLine is what --version prints.
func versionLine() string {
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = ", commit " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("hiercoll %s (%s %s/%s%s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, rev)
}

// jsonHelp is the help of the --json flag of the commands that print rows.
const jsonHelp = "print each row as a JSON object on stdout, one per line (the table goes to stderr)"

// reportTo is where a command's human report goes: stdout, or stderr when
// --json keeps stdout for the JSON lines.
func reportTo(json bool) io.Writer {
	if json {
		return cmdErr
	}
	return cmdOut
}

// joinLine joins errs into one error on one line, "; " between them (the
// command's mistakes are reported on one line).
func joinLine(errs []error) error {
	texts := make([]string, len(errs))
	for i, err := range errs {
		texts[i] = err.Error()
	}
	return errors.New(strings.Join(texts, "; "))
}
