// Command accountable is the Accountable Work Service: one binary whose subcommands serve
// the API, run the Temporal worker (or both, for development), migrate the database,
// manage API keys and verify the ledger offline.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/fx"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/passwords"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/tokens"
	"github.com/accountablework/accountable/webhook"
)

const usage = `accountable: the Accountable Work Service

Usage:
  accountable serve                 serve the HTTP API
  accountable worker                run the Temporal worker
  accountable dev [--bootstrap] [--witness]
                                    API and worker in one process; --bootstrap migrates and
                                    creates a dev user, workspace and key on first run;
                                    --witness runs a local witness (litewitness) beside it
  accountable migrate               create the database if needed and apply migrations
  accountable keys create --name NAME [--new-workspace NAME | --workspace ID] [--user EMAIL] [--agent NAME] [--json]
                                    --agent makes an agent's key: the agent acts for the user, and
                                    the ledger records its commands as the agent's
  accountable keys list [--workspace ID] [--json]
  accountable keys revoke PREFIX
  accountable users create --email EMAIL [--new-workspace NAME | --workspace ID]
                                    a person who signs in to the key settings page (a member of
                                    the workspace); set their password next
  accountable users remove --email EMAIL --workspace ID
                                    ends the membership: every key, session and OAuth grant of the
                                    user stops acting in the workspace at once (keys are not revoked)
  accountable users set-password --email EMAIL
                                    reads the password (12 characters or more) from the first line
                                    of standard input; it is stored as an Argon2id hash
  accountable ledger verify [--workspace ID]
  accountable ledger key            print the public key of the ledger's checkpoints (a signed-note
                                    verifier key), for auditors and witnesses
  accountable ledger audit --key VKEY [--witness VKEY]... [--state FILE] [--receipt FILE [--offline]]
                          [--url URL] [--workspace ID] [--origin ORIGIN] [--follow 10s]
                                    audit a workspace's log with nothing but its public key: the
                                    newest checkpoint's signature and cosignatures, its consistency
                                    with the one kept in --state, a receipt's proof; the API key
                                    in ACCOUNTABLE_API_KEY; non-zero exit with the reason
  accountable ledger log-list       print every workspace's log (origin and key) as a C2SP log list,
                                    for a witness (witnessctl pull-logs -source FILE)

Configuration comes from environment variables (see README.md).
`

// defaultGCPercent replaces the Go runtime's GOGC=100 when GOGC is not set: the service's
// heap is small (tens of MiB) and short-lived garbage dominates it, so collecting a fifth
// as often costs little memory and saves CPU on every request (make bench).
const defaultGCPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "accountable:", err)
		os.Exit(exitCode(err))
	}
}

// errBrokenLedger makes `ledger verify` exit 1 after printing its report.
var errBrokenLedger = errors.New("the ledger failed verification")

func exitCode(err error) int {
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

var errUsage = errors.New("usage")

func run(args []string, out io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(out, usage)
		return nil
	}
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	switch args[0] {
	case "serve":
		fx.New(serveOptions(cfg)).Run()
		return nil
	case "worker":
		fx.New(workerOptions(cfg)).Run()
		return nil
	case "dev":
		fs := flag.NewFlagSet("dev", flag.ContinueOnError)
		bootstrap := fs.Bool("bootstrap", false, "migrate and create a dev key on first run")
		witness := fs.Bool("witness", false, "run a local witness (litewitness) that cosigns the ledger's checkpoints")
		if err := fs.Parse(args[1:]); err != nil {
			return errUsage
		}
		var extra []fx.Option
		if *witness {
			opt, err := withLocalWitness(&cfg)
			if err != nil {
				return err
			}
			extra = append(extra, opt)
		}
		if *bootstrap {
			if err := devBootstrap(cfg, out); err != nil {
				return err
			}
			if !cfg.WebhookSecretKey.Configured() {
				key, err := devWebhookKey(filepath.Join(filepath.Dir(cfg.DevKeyFile), "webhook-secret-key"))
				if err != nil {
					return err
				}
				cfg.WebhookSecretKey = key
			}
			if cfg.OAuthTokenSecret == nil {
				secret, err := devTokenSecret(filepath.Join(filepath.Dir(cfg.DevKeyFile), "oauth-token-secret"))
				if err != nil {
					return err
				}
				cfg.OAuthTokenSecret = secret
			}
		}
		// The local witness first: it is started (and told of the logs) before the sealer.
		fx.New(append(extra, devOptions(cfg))...).Run()
		return nil
	case "migrate":
		return oneShot(cfg, func(ctx context.Context, _ *store.DB) error {
			if err := store.Migrate(ctx, migrateConfig(cfg)); err != nil {
				return err
			}
			fmt.Fprintln(out, "migrations applied")
			return nil
		})
	case "keys":
		return keysCommand(cfg, args[1:], out)
	case "users":
		return usersCommand(cfg, args[1:], os.Stdin, out)
	case "ledger":
		switch {
		case len(args) >= 2 && args[1] == "verify":
			return ledgerVerify(cfg, args[2:], out)
		case len(args) >= 2 && args[1] == "audit":
			return ledgerAudit(cfg, args[2:], out)
		case len(args) == 2 && args[1] == "log-list":
			return ledgerLogList(cfg, out)
		case len(args) == 2 && args[1] == "key":
			key, err := newLedgerKey(cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
			if err != nil {
				return err
			}
			fmt.Fprintln(out, key.VerifierKey)
			return nil
		}
		fmt.Fprint(os.Stderr, usage)
		return errUsage
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
}

// oneShot runs fn inside an fx app that provides the database, then stops the app.
func oneShot(cfg Config, fn func(context.Context, *store.DB) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var runErr error
	app := fx.New(base(cfg), fx.Invoke(func(db *store.DB) { runErr = fn(ctx, db) }))
	if err := app.Err(); err != nil {
		return err
	}
	if err := app.Start(ctx); err != nil {
		return err
	}
	if err := app.Stop(ctx); err != nil && runErr == nil {
		return err
	}
	return runErr
}

func keysCommand(cfg Config, args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errUsage
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	name := fs.String("name", "", "a name for the key")
	newWorkspace := fs.String("new-workspace", "", "create a workspace with this name for the key")
	workspace := fs.String("workspace", "", "the id of an existing workspace")
	user := fs.String("user", "dev@localhost", "email of the user the key belongs to (created when new)")
	agent := fs.String("agent", "", "make an agent's key: the agent with this name acts for the user")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	if *workspace != "" && !accountable.ValidUUID(*workspace) {
		return fmt.Errorf("%w: --workspace must be a UUID", errUsage)
	}
	switch args[0] {
	case "create":
		return oneShot(cfg, func(ctx context.Context, db *store.DB) error {
			k, err := db.CreateKey(ctx, store.CreateKeyRequest{Name: *name, UserEmail: *user, WorkspaceID: *workspace,
				NewWorkspace: *newWorkspace, AgentName: *agent})
			if err != nil {
				return err
			}
			if *asJSON {
				return json.NewEncoder(out).Encode(k)
			}
			fmt.Fprintf(out, "key:          %s\nkey prefix:   %s\nkind:         %s\nworkspace id: %s\nuser id:      %s\n(the key is shown only now; store it safely)\n",
				k.Key, k.KeyPrefix, k.Kind, k.WorkspaceID, k.UserID)
			return nil
		})
	case "list":
		return oneShot(cfg, func(ctx context.Context, db *store.DB) error {
			keys, err := db.ListKeys(ctx, *workspace)
			if err != nil {
				return err
			}
			if *asJSON {
				type row struct {
					KeyPrefix   string     `json:"key_prefix"`
					Name        string     `json:"name"`
					UserEmail   string     `json:"user_email"`
					WorkspaceID string     `json:"workspace_id"`
					CreatedAt   time.Time  `json:"created_at"`
					LastUsedAt  *time.Time `json:"last_used_at"`
					RevokedAt   *time.Time `json:"revoked_at"`
				}
				rows := make([]row, 0, len(keys))
				for _, k := range keys {
					rows = append(rows, row{k.Prefix, k.Name, k.UserEmail, k.WorkspaceID, k.CreatedAt, k.LastUsedAt, k.RevokedAt})
				}
				return json.NewEncoder(out).Encode(rows)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PREFIX\tNAME\tUSER\tWORKSPACE\tCREATED\tLAST USED\tREVOKED")
			for _, k := range keys {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Prefix, k.Name, k.UserEmail, k.WorkspaceID,
					accountable.FormatTime(k.CreatedAt), timeOrDash(k.LastUsedAt), timeOrDash(k.RevokedAt))
			}
			return tw.Flush()
		})
	case "revoke":
		if fs.NArg() != 1 {
			fmt.Fprint(os.Stderr, usage)
			return errUsage
		}
		return oneShot(cfg, func(ctx context.Context, db *store.DB) error {
			k, err := db.RevokeKey(ctx, fs.Arg(0))
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "revoked %s (%s) at %s\n", k.Prefix, k.Name, timeOrDash(k.RevokedAt))
			return nil
		})
	default:
		fmt.Fprint(os.Stderr, usage)
		return errUsage
	}
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return accountable.FormatTime(*t)
}

// ledgerVerify recomputes every workspace's ledger (or one) and prints a report per
// workspace as JSON lines; it fails when any is broken.
func ledgerVerify(cfg Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ledger verify", flag.ContinueOnError)
	workspace := fs.String("workspace", "", "verify only this workspace")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *workspace != "" && !accountable.ValidUUID(*workspace) {
		return fmt.Errorf("%w: --workspace must be a UUID", errUsage)
	}
	return oneShot(cfg, func(ctx context.Context, db *store.DB) error {
		ids := []string{*workspace}
		if *workspace == "" {
			var err error
			if ids, err = db.ListWorkspaceIDs(ctx); err != nil {
				return err
			}
		}
		broken := false
		enc := json.NewEncoder(out)
		for _, id := range ids {
			v, err := db.VerifyLedger(ctx, id, accountable.LedgerScope{})
			if err != nil {
				return err
			}
			broken = broken || !v.Verified
			if err := enc.Encode(map[string]any{"workspaceId": id, "verified": v.Verified, "eventCount": v.EventCount,
				"headHash": v.HeadHash, "firstBrokenEventId": v.FirstBrokenEventID, "firstBrokenReason": v.FirstBrokenReason}); err != nil {
				return err
			}
		}
		if broken {
			return errBrokenLedger
		}
		return nil
	})
}

// ledgerLogList prints every workspace's log as a C2SP witness log list ("logs/v0").
func ledgerLogList(cfg Config, out io.Writer) error {
	key, err := newLedgerKey(cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	return oneShot(cfg, func(ctx context.Context, db *store.DB) error {
		ids, err := db.ListWorkspaceIDs(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "logs/v0")
		for _, id := range ids {
			fmt.Fprintf(out, "vkey %s\norigin %s\n", key.VerifierKey, ledgerlog.Origin(cfg.LedgerLogName, id))
		}
		return nil
	})
}

func migrateConfig(cfg Config) store.MigrateConfig {
	return store.MigrateConfig{OwnerURL: cfg.MigrationDatabaseURL, ServiceURL: cfg.DatabaseURL}
}

// devSecret reads a dev secret (32 random bytes in base64) from path, making it on first
// run, so that what depends on it survives a restart of make run.
func devSecret(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		b := make([]byte, 32)
		rand.Read(b) // never fails (crypto/rand)
		raw = []byte(base64.StdEncoding.EncodeToString(b) + "\n")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", err
		}
		err = os.WriteFile(path, raw, 0o600)
	}
	return string(raw), err
}

// devWebhookKey is the dev webhook secret key (endpoints registered under make run keep
// working after a restart).
func devWebhookKey(path string) (webhook.SecretKey, error) {
	raw, err := devSecret(path)
	if err != nil {
		return webhook.SecretKey{}, err
	}
	return webhook.ParseSecretKey(raw)
}

// devTokenSecret is the dev OAuth token secret (MCP clients connected under make run stay
// connected after a restart).
func devTokenSecret(path string) ([]byte, error) {
	raw, err := devSecret(path)
	if err != nil {
		return nil, err
	}
	return parseTokenSecret(raw)
}

// devBootstrap migrates and, on first run, creates a dev user, workspace and API key. The
// key is kept in DEV_KEY_FILE (under .data/, ignored by git) so later runs can print it.
func devBootstrap(cfg Config, out io.Writer) error {
	return oneShot(cfg, func(ctx context.Context, db *store.DB) error {
		if err := store.Migrate(ctx, migrateConfig(cfg)); err != nil {
			return err
		}
		if raw, err := os.ReadFile(cfg.DevKeyFile); err == nil {
			if key := strings.TrimSpace(string(raw)); key != "" {
				if prefix, ok := tokens.ParseAPIKey(key); ok {
					if k, _, err := db.KeyByPrefix(ctx, prefix); err == nil && k.RevokedAt == nil {
						printDevKey(out, cfg, key, k.WorkspaceID)
						return nil
					}
				}
			}
		}
		k, err := db.CreateKey(ctx, store.CreateKeyRequest{Name: "dev", UserEmail: "dev@localhost", NewWorkspace: "Dev workspace"})
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(cfg.DevKeyFile), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(cfg.DevKeyFile, []byte(k.Key+"\n"), 0o600); err != nil {
			return err
		}
		printDevKey(out, cfg, k.Key, k.WorkspaceID)
		return nil
	})
}

func printDevKey(out io.Writer, cfg Config, key, workspaceID string) {
	fmt.Fprintf(out, `
  Accountable Work Service (dev)
  API:          %[1]s/api/v1
  Temporal UI:  %[5]s
  Workspace:    %[3]s
  Dev API key:  %[2]s   (kept in %[4]s)

  Try:  curl -s -H "Authorization: Bearer %[2]s" %[1]s/api/v1/credential

`, cfg.SiteURL, key, workspaceID, cfg.DevKeyFile, cfg.TemporalUIURL)
}

// usersCommand is `accountable users create|remove|set-password`.
func usersCommand(cfg Config, args []string, in io.Reader, out io.Writer) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "remove" && args[0] != "set-password") {
		fmt.Fprint(os.Stderr, usage)
		return errUsage
	}
	fs := flag.NewFlagSet("users "+args[0], flag.ContinueOnError)
	email := fs.String("email", "", "the user's email")
	newWorkspace := fs.String("new-workspace", "", "create a workspace with this name for the user")
	workspace := fs.String("workspace", "", "the id of an existing workspace")
	if err := fs.Parse(args[1:]); err != nil || *email == "" {
		return fmt.Errorf("%w: --email is required", errUsage)
	}
	if args[0] == "create" {
		return oneShot(cfg, func(ctx context.Context, db *store.DB) error {
			u, err := db.CreateUser(ctx, store.CreateKeyRequest{UserEmail: *email, WorkspaceID: *workspace, NewWorkspace: *newWorkspace})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "user id:      %s\nworkspace id: %s\n(set a password with: accountable users set-password --email %s)\n", u.UserID, u.WorkspaceID, *email)
			return nil
		})
	}
	if args[0] == "remove" {
		if !accountable.ValidUUID(*workspace) {
			return fmt.Errorf("%w: --workspace must be a UUID (the workspace to remove the user from)", errUsage)
		}
		return oneShot(cfg, func(ctx context.Context, db *store.DB) error {
			userID, err := db.RemoveMember(ctx, *workspace, *email)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "removed user %s (%s) from workspace %s\n", *email, userID, accountable.NormalizeUUID(*workspace))
			return nil
		})
	}
	line, err := bufio.NewReader(io.LimitReader(in, passwords.MaxLength+2)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	hash, err := passwords.Hash(strings.TrimRight(line, "\r\n"))
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return oneShot(cfg, func(ctx context.Context, db *store.DB) error {
		if err := db.SetPassword(ctx, *email, hash); err != nil {
			return err
		}
		fmt.Fprintf(out, "password set for %s\n", *email)
		return nil
	})
}
