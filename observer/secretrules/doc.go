// Package secretrules holds a maintained rule set of credential formats
// as data — gitleaks' default rules (gitleaks.toml, MIT, LICENSE-gitleaks)
// — with the small TOML reader it needs and a matcher that runs only the
// rules whose keywords a text holds. observer's redactor applies it after
// its own rules; the file is embedded unchanged, so a newer version of
// the rule set is a copied file.
package secretrules
