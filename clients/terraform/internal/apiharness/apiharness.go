// Package apiharness starts a real jobsched API for the acceptance tests: its own database
// (ensure_database, migrate), gunicorn on a free 127.0.0.1 port with production-like settings
// (DEBUG off, fresh keys), and a token for a tenant of the run's own.
package apiharness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DefaultDatabaseURL is used when neither TF_ACC_DATABASE_URL nor DATABASE_URL is set.
const DefaultDatabaseURL = "mysql://root@127.0.0.1:3306/jobsched"

// databaseSuffix gives the acceptance tests a database of their own beside DATABASE_URL's.
const databaseSuffix = "_tfacc"

// API is a running jobsched API.
type API struct {
	URL      string // http://127.0.0.1:<port>
	Token    string // a token for Tenant
	Tenant   string
	Root     string // the repository's root
	env      []string
	python   string
	server   *exec.Cmd
	logPath  string
	serverWG chan struct{}
}

// RepoRoot finds the jobsched checkout above dir (the directory holding manage.py).
func RepoRoot(dir string) (string, error) {
	dir, _ = filepath.Abs(dir)
	for {
		if _, err := os.Stat(filepath.Join(dir, "manage.py")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no manage.py above the test's directory: run the tests inside a jobsched checkout")
		}
		dir = parent
	}
}

// DatabaseURL is TF_ACC_DATABASE_URL, else DATABASE_URL's server with the database name + "_tfacc".
func DatabaseURL() (string, error) {
	if explicit := os.Getenv("TF_ACC_DATABASE_URL"); explicit != "" {
		return explicit, nil
	}
	base := os.Getenv("DATABASE_URL")
	if base == "" {
		base = DefaultDatabaseURL
	}
	parsed, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL: %w", err)
	}
	name := strings.Trim(parsed.Path, "/")
	if name == "" {
		name = "jobsched"
	}
	parsed.Path = "/" + name + databaseSuffix
	return parsed.String(), nil
}

func randomHex(n int) string {
	raw := make([]byte, n)
	if _, err := rand.Read(raw); err != nil {
		panic(err)
	}
	return hex.EncodeToString(raw)
}

func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// Start prepares the database and starts the API; Stop ends it. logDir holds the server's log.
func Start(ctx context.Context, root, logDir string) (*API, error) {
	python := os.Getenv("JOBSCHED_PYTHON")
	if python == "" {
		python = filepath.Join(root, ".venv", "bin", "python")
	}
	if _, err := os.Stat(python); err != nil {
		return nil, fmt.Errorf("no Python at %s: run `make venv` first (or set JOBSCHED_PYTHON)", python)
	}
	databaseURL, err := DatabaseURL()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	fernet := make([]byte, 32)
	if _, err := rand.Read(fernet); err != nil {
		return nil, err
	}
	settings := map[string]string{
		"DJANGO_SETTINGS_MODULE":  "jobsched_project.settings",
		"DEBUG":                   "0",
		"SECRET_KEY":              "tfacc-" + randomHex(32),
		"JWT_VERIFYING_KEY":       "tfacc-" + randomHex(32),
		"SECRETS_ENCRYPTION_KEYS": base64.URLEncoding.EncodeToString(fernet),
		"ALLOWED_HOSTS":           "127.0.0.1",
		"SECURE_SSL_REDIRECT":     "0",
		"DATABASE_URL":            databaseURL,
		// Terraform's refreshes make many reads; the tenant's rate is not under test here.
		"TENANT_THROTTLE_RATE": "100000/minute",
		"GUNICORN_BIND":        fmt.Sprintf("127.0.0.1:%d", port),
		"GUNICORN_WORKERS":     "2",
		"LOG_LEVEL":            "WARNING",
	}
	drop := map[string]bool{"PROMETHEUS_MULTIPROC_DIR": true, "THROTTLE_CACHE_URL": true, "EGRESS_ALLOWLIST": true}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if _, overridden := settings[name]; !overridden && !drop[name] {
			env = append(env, kv)
		}
	}
	for name, value := range settings {
		env = append(env, name+"="+value)
	}
	api := &API{
		URL: fmt.Sprintf("http://127.0.0.1:%d", port), Tenant: "tfacc-" + randomHex(6), Root: root,
		env: env, python: python, logPath: filepath.Join(logDir, "jobsched-api.log"),
	}
	for _, command := range [][]string{{"manage.py", "ensure_database"}, {"manage.py", "migrate", "--noinput"}} {
		if _, err := api.manage(ctx, command...); err != nil {
			return nil, err
		}
	}
	token, err := api.manage(ctx, "manage.py", "issue_token", "--tenant", api.Tenant, "--ttl", "86400")
	if err != nil {
		return nil, err
	}
	api.Token = strings.TrimSpace(token)
	if err := api.startServer(ctx); err != nil {
		return nil, err
	}
	return api, nil
}

func (a *API) manage(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, a.python, args...)
	cmd.Dir, cmd.Env = a.Root, a.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 3000))
	}
	return stdout.String(), nil
}

// IssueToken mints a token for another tenant (isolation tests).
func (a *API) IssueToken(ctx context.Context, tenant string) (string, error) {
	token, err := a.manage(ctx, "manage.py", "issue_token", "--tenant", tenant, "--ttl", "3600")
	return strings.TrimSpace(token), err
}

func (a *API) startServer(ctx context.Context) error {
	logFile, err := os.Create(a.logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(a.python, "-m", "gunicorn", "-c", "gunicorn.conf.py", "jobsched_project.wsgi")
	cmd.Dir, cmd.Env = a.Root, a.env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Stop ends gunicorn's workers too
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	a.server = cmd
	a.serverWG = make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(a.serverWG) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-a.serverWG:
			return fmt.Errorf("gunicorn exited at start:\n%s", a.Log())
		case <-ctx.Done():
			a.Stop()
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := http.Get(a.URL + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	a.Stop()
	return fmt.Errorf("gunicorn did not answer /healthz within 60 s:\n%s", a.Log())
}

// Log is the end of the server's log.
func (a *API) Log() string {
	data, _ := os.ReadFile(a.logPath)
	return tail(string(data), 4000)
}

// Stop ends the server (SIGTERM to its process group, SIGKILL after 20 s).
func (a *API) Stop() {
	if a.server == nil || a.server.Process == nil {
		return
	}
	pgid := a.server.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-a.serverWG:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-a.serverWG
	}
	a.server = nil
}

func tail(text string, n int) string {
	if len(text) <= n {
		return text
	}
	return "..." + text[len(text)-n:]
}
