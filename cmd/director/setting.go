package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"director/errcode"
	"director/launcher"
)

// settingFlag is a string flag that an environment variable can set too
// (--home and DIRECTOR_HOME), where a variable set to the empty string is
// the same as one not set: the flag's default. urfave/cli takes an empty
// variable for a value, so DIRECTOR_HOME= made the home "", the working
// directory, and DIRECTOR_LOG_LEVEL= failed; an env file or a crontab line
// that empties a variable means "not this", not "nothing". urfave/cli
// already reads an empty variable of a duration, number or boolean flag as
// unset.
//
// Given on the command line, an empty value is refused (refuseEmpty): it
// is almost always an unset shell variable (`--home "$DIR"`), and taking it
// for the default would act on ~/.director.
type settingFlag struct{ *cli.StringFlag }

// setting makes f a settingFlag.
func setting(f *cli.StringFlag) cli.Flag { return &settingFlag{f} }

// Apply registers the flag with its default, or the value of the first of
// its variables that is set and not empty. It leaves f.Value alone, so that
// help shows the default, not the environment's value.
func (f *settingFlag) Apply(set *flag.FlagSet) error {
	val := f.Value
	for _, env := range f.EnvVars {
		if v := os.Getenv(env); v != "" {
			val = v
			f.HasBeenSet = true
			break
		}
	}
	for _, name := range f.Names() {
		set.String(name, val, f.Usage)
	}
	return nil
}

// refuseEmpty fails with invalid_input when one of flags, a settingFlag,
// was given an empty value on the command line (an empty variable never
// sets it: see settingFlag).
func refuseEmpty(c *cli.Context, flags []cli.Flag) error {
	for _, fl := range flags {
		f, ok := fl.(*settingFlag)
		if !ok || !c.IsSet(f.Name) || c.String(f.Name) != "" {
			continue
		}
		return errcode.New(errcode.InvalidInput, "--%s is empty", f.Name).
			WithHint("give --%s a value, or leave it out for its default (%s set to \"\" counts as unset)", f.Name, f.EnvVars[0])
	}
	return nil
}

// refuseTilde fails with invalid_input when --home or a file:// --store
// starts with a "~" that no shell expanded: an env file, a crontab or
// systemd's Environment= leave DIRECTOR_HOME=~/x as it is, and it named a
// directory "~" under the working directory. The key settings are checked
// where a command loads them (loadKeys), so that a command that uses no
// key works whatever they hold.
func refuseTilde(c *cli.Context, flags []cli.Flag) error {
	for _, fl := range flags {
		f, ok := fl.(*settingFlag)
		if !ok || !c.IsSet(f.Name) {
			continue
		}
		v := c.String(f.Name)
		switch f.Name {
		case "home":
			if err := tildeErr(settingSource(f, v), v, ""); err != nil {
				return err
			}
		case "store":
			if p, ok := strings.CutPrefix(v, "file://"); ok {
				if err := tildeErr(settingSource(f, v), p, "file://"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// settingSource names where a setting's value v came from: its variable
// when that holds v, else the flag.
func settingSource(f *settingFlag, v string) string {
	if len(f.EnvVars) > 0 && os.Getenv(f.EnvVars[0]) == v {
		return f.EnvVars[0]
	}
	return "--" + f.Name
}

// tildeErr is the invalid_input of a path p, given by source, that starts
// with a "~" no shell expanded; nil for any other path. scheme goes before
// the full path the hint suggests (file:// for a store).
func tildeErr(source, p, scheme string) error {
	if !strings.HasPrefix(p, "~") {
		return nil
	}
	hint := "write the full path"
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			hint += ", such as " + scheme + filepath.Join(home, rest)
		}
	}
	return errcode.New(errcode.InvalidInput, "%s holds %q, whose ~ no shell expanded (an env file, a crontab line or a quoted value keep it as it is)", source, p).
		WithHint("%s", hint)
}

// chromeSettingErr is what is wrong with the --chrome / CHROME_PATH
// setting itself: a ~ no shell expanded (tildeErr). It is asked only by the
// commands that start or ask Chrome, so that profile list works whatever
// the setting holds.
func chromeSettingErr(c *cli.Context) error {
	return tildeErr(flagSource(c, "chrome", "CHROME_PATH"), c.String("chrome"), "")
}

// findChrome is launcher.Find of --chrome / CHROME_PATH, once
// chromeSettingErr has passed.
func findChrome(c *cli.Context) (string, error) {
	if err := chromeSettingErr(c); err != nil {
		return "", err
	}
	return launcher.Find(c.String("chrome"))
}
