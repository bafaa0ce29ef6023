package deploy_test

// The deployment files at the repository root, checked without a container engine (the test
// machines have none): docker-compose.yml against the Compose Specification's JSON Schema and
// against what its comments promise; the Dockerfile's build stage run step by step on this
// machine (its COPYs, ENV and `go` RUNs, in a temporary root), the binary it produces checked
// to be static and to start; and the runtime stage's promises. No image is built and no
// container is started.

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// repoRoot is the module root, the directory holding docker-compose.yml and Dockerfile.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not the parent of the deploy package: %v", err)
	}
	return root
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ---- docker-compose.yml ------------------------------------------------------------------

// loadCompose loads a compose file the way `docker compose` does, with compose-go (the
// library Docker Compose itself uses): YAML anchors and merge keys resolved, ${VAR:-default}
// interpolated from an empty environment (so the defaults apply, whatever the shell holds),
// the model validated against the Compose Specification's JSON Schema (compose-spec.json,
// embedded in compose-go) and then checked for consistency (depends_on naming existing
// services, and so on).
func loadCompose(t *testing.T, content []byte) (*types.Project, error) {
	t.Helper()
	root := repoRoot(t)
	return loader.LoadWithContext(t.Context(), types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, "docker-compose.yml"), Content: content}},
		Environment: types.Mapping{},
	})
}

// mutate replaces the first occurrence of old in content, failing the test when there is
// none: a mutation that changes nothing proves nothing.
func mutate(t *testing.T, content []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(content, []byte(old)) {
		t.Fatalf("docker-compose.yml no longer contains %q: update this mutation", old)
	}
	return bytes.Replace(content, []byte(old), []byte(new), 1)
}

func TestComposeFileMatchesComposeSpecification(t *testing.T) {
	t.Parallel()
	content := readFile(t, "docker-compose.yml")
	if _, err := loadCompose(t, content); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}

	// The same load refuses broken copies of the file, with the schema's error (compose-go
	// prefixes those with "validating <file>"): the check above can fail.
	broken := []struct{ name, old, new string }{
		{"unknown service key", "  migrate:\n    <<: *accountable\n", "  migrate:\n    <<: *accountable\n    no_such_key: true\n"},
		{"ports not a list", "    ports:\n      - \"127.0.0.1:8080:8080\"\n", "    ports: \"127.0.0.1:8080:8080\"\n"},
		{"unknown depends_on condition", "condition: service_completed_successfully", "condition: service_finished"},
		{"unknown top-level key", "\nvolumes:\n", "\nvolumez:\n"},
		{"command a mapping", `command: ["migrate"]`, `command: {run: migrate}`},
	}
	for _, b := range broken {
		t.Run("refuses "+b.name, func(t *testing.T) {
			_, err := loadCompose(t, mutate(t, content, b.old, b.new))
			if err == nil {
				t.Fatal("the broken file loaded without error")
			}
			if !strings.Contains(err.Error(), "validating ") {
				t.Fatalf("refused, but not by the schema: %v", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// composePromises returns what the project breaks of the promises docker-compose.yml's
// comments (and docs/deployment.md) make.
func composePromises(root string, p *types.Project) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	want := []string{"api", "migrate", "postgres", "temporal", "temporal-postgres", "temporal-ui", "worker"}
	if got := slices.Sorted(func(yield func(string) bool) {
		for name := range p.Services {
			if !yield(name) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		bad("services are %v, want %v", got, want)
	}

	for name, s := range p.Services {
		// Every published port is bound to 127.0.0.1 only.
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				bad("%s publishes port %d on host address %q, not 127.0.0.1", name, port.Target, port.HostIP)
			}
		}
		switch policy, _, _ := strings.Cut(s.Restart, ":"); policy { // on-failure[:max-retries]
		case "", types.RestartPolicyNo, types.RestartPolicyAlways, types.RestartPolicyOnFailure, types.RestartPolicyUnlessStopped:
		default:
			// The schema takes any string here; Docker refuses others when it starts the service.
			bad("%s has restart policy %q", name, s.Restart)
		}
	}

	// api, worker and migrate run the one image built from the Dockerfile, each its subcommand.
	commands := map[string]string{"api": "serve", "worker": "worker", "migrate": "migrate"}
	for name, command := range commands {
		s, ok := p.Services[name]
		if !ok {
			continue
		}
		if s.Image != "accountable:local" {
			bad("%s runs image %q, want accountable:local", name, s.Image)
		}
		if s.Build == nil {
			bad("%s has no build section", name)
		} else {
			dockerfile := s.Build.Dockerfile
			if !filepath.IsAbs(dockerfile) {
				dockerfile = filepath.Join(s.Build.Context, dockerfile)
			}
			if filepath.Clean(s.Build.Context) != root || dockerfile != filepath.Join(root, "Dockerfile") {
				bad("%s is built from %s with context %s, want the repository's Dockerfile and root", name, dockerfile, s.Build.Context)
			}
		}
		if !slices.Equal(s.Command, types.ShellCommand{command}) {
			bad("%s runs %q, want [%q]", name, []string(s.Command), command)
		}
	}
	// API and worker start only once migrate has exited 0.
	for _, name := range []string{"api", "worker"} {
		dep, ok := p.Services[name].DependsOn["migrate"]
		if !ok || dep.Condition != types.ServiceConditionCompletedSuccessfully {
			bad("%s does not wait for migrate to complete successfully (depends_on: %+v)", name, p.Services[name].DependsOn)
		}
	}
	return problems
}

func TestComposeFileKeepsItsPromises(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	content := readFile(t, "docker-compose.yml")
	p, err := loadCompose(t, content)
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, problem := range composePromises(root, p) {
		t.Error(problem)
	}

	// Files that are valid Compose but break a promise are caught.
	broken := []struct{ name, old, new string }{
		{"port on every address", `"127.0.0.1:8080:8080"`, `"8080:8080"`},
		{"api not waiting for migrate", "      migrate:\n        condition: service_completed_successfully\n", "      migrate:\n        condition: service_started\n"},
		{"worker running serve", `command: ["worker"]`, `command: ["serve"]`},
		{"restart policy docker refuses", `restart: "no"`, `restart: sometimes`},
	}
	for _, b := range broken {
		t.Run("catches "+b.name, func(t *testing.T) {
			p, err := loadCompose(t, mutate(t, content, b.old, b.new))
			if err != nil {
				t.Fatalf("the mutated file does not load: %v", err)
			}
			problems := composePromises(root, p)
			if len(problems) == 0 {
				t.Fatal("no broken promise reported")
			}
			t.Logf("reported: %v", problems)
		})
	}

	// The API's container port is the one the image exposes.
	stages := parseStages(t, string(readFile(t, "Dockerfile")))
	exposed := strings.Fields(stages[len(stages)-1].args("EXPOSE"))
	for _, port := range p.Services["api"].Ports {
		if !slices.Contains(exposed, strconv.Itoa(int(port.Target))) {
			t.Errorf("api publishes container port %d, the image exposes %v", port.Target, exposed)
		}
	}
}

// ---- Dockerfile --------------------------------------------------------------------------
//
// A small Dockerfile reader, not BuildKit's own parser (github.com/moby/buildkit's
// frontend/dockerfile/parser and instructions): every BuildKit release's go.mod requires
// newer versions of about ten modules the service itself links (OpenTelemetry exporters,
// grpc-gateway, fsnotify, ...), which a test's parser should not move. It reads what this
// Dockerfile uses (comments, `\` continuations, JSON and shell forms, leading --flags) and
// refuses what it does not know (the escape directive, heredocs), so a Dockerfile it cannot
// read fails the test instead of being misread.

type instruction struct {
	line  int
	cmd   string   // upper-case keyword
	flags []string // leading --name=value flags (FROM, COPY, ADD, RUN)
	rest  string   // the arguments after the flags, as written
	exec  []string // the JSON (exec) form's elements; nil for the shell form
}

type stage struct {
	index        int
	base, name   string
	instructions []instruction // after FROM
}

// args returns the arguments of the stage's last cmd instruction ("" if it has none).
func (s stage) args(cmd string) string {
	for _, in := range slices.Backward(s.instructions) {
		if in.cmd == cmd {
			return in.rest
		}
	}
	return ""
}

func (s stage) last(cmd string) (instruction, bool) {
	for _, in := range slices.Backward(s.instructions) {
		if in.cmd == cmd {
			return in, true
		}
	}
	return instruction{}, false
}

func (in instruction) flag(name string) (string, bool) {
	for _, f := range in.flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

var directive = regexp.MustCompile(`^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.*)$`)

func parseDockerfile(text string) ([]instruction, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var out []instruction
	directives := true
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "#") {
			if m := directive.FindStringSubmatch(line); directives && m != nil {
				if strings.EqualFold(m[1], "escape") {
					return nil, fmt.Errorf("line %d: the escape directive is not supported by this reader", i+1)
				}
				continue
			}
			directives = false
			continue
		}
		directives = false
		if line == "" {
			continue
		}
		start := i + 1
		// Continuation lines: a trailing backslash joins the next line; comment and empty
		// lines inside a continued instruction are dropped, as Docker does.
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			line = strings.TrimSuffix(line, `\`)
			i++
			next := strings.TrimSpace(lines[i])
			for (next == "" || strings.HasPrefix(next, "#")) && i+1 < len(lines) {
				i++
				next = strings.TrimSpace(lines[i])
			}
			line += " " + next
		}
		keyword, rest, _ := strings.Cut(line, " ")
		in := instruction{line: start, cmd: strings.ToUpper(keyword), rest: strings.TrimSpace(rest)}
		switch in.cmd {
		case "FROM", "COPY", "ADD", "RUN":
			for strings.HasPrefix(in.rest, "--") {
				f, r, _ := strings.Cut(in.rest, " ")
				in.flags = append(in.flags, f)
				in.rest = strings.TrimSpace(r)
			}
		}
		switch in.cmd {
		case "RUN", "CMD", "ENTRYPOINT", "COPY", "ADD", "SHELL", "VOLUME":
			if strings.Contains(in.rest, "<<") {
				return nil, fmt.Errorf("line %d: heredocs are not supported by this reader", start)
			}
			if strings.HasPrefix(in.rest, "[") {
				var exec []string
				if err := json.Unmarshal([]byte(in.rest), &exec); err == nil {
					in.exec = exec
				}
			}
		}
		out = append(out, in)
	}
	return out, nil
}

// stages splits the instructions at each FROM (`FROM image [AS name]`).
func stages(ins []instruction) ([]stage, error) {
	var out []stage
	for _, in := range ins {
		if in.cmd == "FROM" {
			f := strings.Fields(in.rest)
			s := stage{index: len(out)}
			switch {
			case len(f) == 1:
				s.base = f[0]
			case len(f) == 3 && strings.EqualFold(f[1], "AS"):
				s.base, s.name = f[0], f[2]
			default:
				return nil, fmt.Errorf("line %d: FROM %s", in.line, in.rest)
			}
			out = append(out, s)
			continue
		}
		switch in.cmd {
		case "ARG":
			return nil, fmt.Errorf("line %d: ARG is not supported by this reader (extend it)", in.line)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
		}
		out[len(out)-1].instructions = append(out[len(out)-1].instructions, in)
	}
	if len(out) == 0 {
		return nil, errors.New("no FROM")
	}
	return out, nil
}

func parseStages(t *testing.T, text string) []stage {
	t.Helper()
	ins, err := parseDockerfile(text)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	s, err := stages(ins)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return s
}

// stageFrom returns the stage a COPY --from names (by name or index) that comes before the
// stage at index before.
func stageFrom(ss []stage, ref string, before int) (stage, bool) {
	for _, s := range ss[:before] {
		if s.name == ref || strconv.Itoa(s.index) == ref {
			return s, true
		}
	}
	return stage{}, false
}

// parseEnv reads `ENV k=v k2=v2` (and the legacy `ENV k v`); quoting, escapes and variable
// references are refused rather than misread.
func parseEnv(rest string) ([][2]string, error) {
	if strings.ContainsAny(rest, `"'\$`) {
		return nil, fmt.Errorf("ENV %s: quotes, escapes and variables are not supported by this reader", rest)
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return nil, errors.New("ENV without arguments")
	}
	if !strings.Contains(f[0], "=") {
		return [][2]string{{f[0], strings.TrimSpace(strings.TrimPrefix(rest, f[0]))}}, nil
	}
	var out [][2]string
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("ENV %s: %q is not name=value", rest, kv)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

var distrolessNonroot = regexp.MustCompile(`^gcr\.io/distroless/static(-debian\d+)?:nonroot(@sha256:[0-9a-f]{64})?$`)

// runtimeProblems returns what the final stage breaks of the image's promises: a distroless
// static nonroot base (no shell, no libc: the binary must be static), the binary as
// ENTRYPOINT in the exec form (there is no shell to run a shell form), `serve` as the
// default command, the nonroot user, no RUN (nothing to run it with), and every COPY --from
// naming an earlier stage.
func runtimeProblems(ss []stage) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	final := ss[len(ss)-1]
	if !distrolessNonroot.MatchString(final.base) {
		bad("the runtime stage's base is %s, want gcr.io/distroless/static(-debianN):nonroot", final.base)
	}
	if in, ok := final.last("ENTRYPOINT"); !ok || !slices.Equal(in.exec, []string{"/accountable"}) {
		bad(`ENTRYPOINT is %q, want ["/accountable"]`, in.rest)
	}
	if in, ok := final.last("CMD"); !ok || !slices.Equal(in.exec, []string{"serve"}) {
		bad(`CMD is %q, want ["serve"]`, in.rest)
	}
	if user, _, _ := strings.Cut(final.args("USER"), ":"); user != "nonroot" && user != "65532" {
		bad("USER is %q, want nonroot", final.args("USER"))
	}
	copiesBinary := false
	for _, s := range ss {
		for _, in := range s.instructions {
			if in.cmd == "RUN" && s.index == final.index {
				bad("line %d: RUN in the runtime stage, whose image has no shell", in.line)
			}
			if in.cmd != "COPY" {
				continue
			}
			if ref, ok := in.flag("from"); ok {
				if _, ok := stageFrom(ss, ref, s.index); !ok {
					bad("line %d: COPY --from=%s names no earlier stage", in.line, ref)
				}
			}
			if f := strings.Fields(in.rest); s.index == final.index && len(f) > 0 && f[len(f)-1] == "/accountable" {
				copiesBinary = true
			}
		}
	}
	if !copiesBinary {
		bad("the runtime stage copies nothing to /accountable, its ENTRYPOINT")
	}
	return problems
}

func TestDockerfileStages(t *testing.T) {
	t.Parallel()
	text := string(readFile(t, "Dockerfile"))
	ss := parseStages(t, text)
	if len(ss) < 2 {
		t.Fatalf("Dockerfile has %d stage(s), want a build stage and a runtime stage", len(ss))
	}
	for _, problem := range runtimeProblems(ss) {
		t.Error(problem)
	}

	// The build stage's Go is go.mod's language version (GOTOOLCHAIN=auto fetches a newer
	// patch release go.mod may name).
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(readFile(t, "go.mod")))
	build := buildStage(t, ss)
	if goVersion == nil || !strings.HasPrefix(build.base, "golang:"+goVersion[1]+"-") && build.base != "golang:"+goVersion[1] {
		t.Errorf("the build stage's base is %s, go.mod says %v", build.base, goVersion)
	}

	// Each promise can fail.
	broken := []struct{ name, old, new string }{
		{"COPY from a stage that does not exist", "COPY --from=build ", "COPY --from=builder "},
		{"a base with a shell", "FROM gcr.io/distroless/static-debian12:nonroot", "FROM gcr.io/distroless/base-debian12:nonroot"},
		{"a shell-form CMD", `CMD ["serve"]`, "CMD serve"},
		{"running as root", "USER nonroot:nonroot", "USER root"},
		{"a RUN in the runtime stage", "EXPOSE 8080\n", "EXPOSE 8080\nRUN chmod 0555 /accountable\n"},
	}
	for _, b := range broken {
		t.Run("catches "+b.name, func(t *testing.T) {
			if !strings.Contains(text, b.old) {
				t.Fatalf("Dockerfile no longer contains %q: update this mutation", b.old)
			}
			problems := runtimeProblems(parseStages(t, strings.Replace(text, b.old, b.new, 1)))
			if len(problems) == 0 {
				t.Fatal("no problem reported")
			}
			t.Logf("reported: %v", problems)
		})
	}
}

// buildStage returns the stage the runtime stage copies the binary from.
func buildStage(t *testing.T, ss []stage) stage {
	t.Helper()
	final := ss[len(ss)-1]
	var found []stage
	for _, in := range final.instructions {
		if ref, ok := in.flag("from"); ok && in.cmd == "COPY" {
			s, ok := stageFrom(ss, ref, final.index)
			if !ok {
				t.Fatalf("line %d: COPY --from=%s names no earlier stage", in.line, ref)
			}
			if !slices.ContainsFunc(found, func(f stage) bool { return f.index == s.index }) {
				found = append(found, s)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("the runtime stage copies from %d stages; this test runs exactly one (extend it)", len(found))
	}
	return found[0]
}

// staticProblem says why the ELF file at name is not statically linked ("" if it is).
func staticProblem(name string) (string, error) {
	f, err := elf.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			return "it names a program interpreter (PT_INTERP)", nil
		case elf.PT_DYNAMIC:
			return "it has a dynamic section (PT_DYNAMIC)", nil
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		return fmt.Sprintf("it imports %v", libs), nil
	}
	return "", nil
}

// absPath finds the absolute paths in a RUN command (after a space, '=' or a quote), which
// this test maps into its temporary root.
var absPath = regexp.MustCompile(`(^|[\s="'])(/[^\s"']*)`)

// TestDockerfileBuildSteps runs the build stage on this machine, instruction by instruction,
// in a temporary directory standing for the stage's filesystem root: WORKDIR, ENV, COPY from
// the build context (the repository minus .dockerignore's patterns, read with the matcher
// Docker uses) and each `RUN go ...` as written, through `sh -c` as the image would, with the
// stage's ENV. The binary it writes must be statically linked (the runtime image has no libc)
// and must start. The golang base image itself is not pulled: the Go here is the one running
// the test, which go.mod's go line pins to the same release.
func TestDockerfileBuildSteps(t *testing.T) {
	t.Parallel()
	repo := repoRoot(t)
	ss := parseStages(t, string(readFile(t, "Dockerfile")))
	build := buildStage(t, ss)
	final := ss[len(ss)-1]

	patterns, err := ignorefile.ReadAll(bytes.NewReader(readFile(t, ".dockerignore")))
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	ignore, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	root := t.TempDir()
	workdir := "/"
	// The host's environment (module and build caches, PATH to this Go), the image's
	// platform, then the stage's ENV over them.
	env := append(os.Environ(), "GOOS=linux")
	for _, in := range build.instructions {
		switch in.cmd {
		case "WORKDIR":
			workdir = path.Join(workdir, in.rest)
			if err := os.MkdirAll(filepath.Join(root, workdir), 0o755); err != nil {
				t.Fatal(err)
			}
		case "ENV":
			kvs, err := parseEnv(in.rest)
			if err != nil {
				t.Fatalf("line %d: %v", in.line, err)
			}
			for _, kv := range kvs {
				env = append(env, kv[0]+"="+kv[1])
			}
		case "COPY":
			if len(in.flags) > 0 || in.exec != nil {
				t.Fatalf("line %d: COPY %v %s is not supported by this test (extend it)", in.line, in.flags, in.rest)
			}
			f := strings.Fields(in.rest)
			if len(f) < 2 {
				t.Fatalf("line %d: COPY %s", in.line, in.rest)
			}
			dest := f[len(f)-1]
			if !path.IsAbs(dest) {
				dest = path.Join(workdir, dest)
			}
			for _, src := range f[:len(f)-1] {
				copyFromContext(t, ignore, repo, path.Clean(src), filepath.Join(root, dest))
			}
		case "RUN":
			cmd := in.rest
			if in.exec != nil || len(in.flags) > 0 || !strings.HasPrefix(cmd, "go ") || strings.ContainsAny(cmd, ";&|`$()<>") {
				t.Fatalf("line %d: RUN %s: only single `go` commands in the shell form can run without a container engine (extend this test)", in.line, cmd)
			}
			local := absPath.ReplaceAllString(cmd, "${1}"+root+"${2}")
			run := exec.CommandContext(ctx, "sh", "-c", local)
			run.Dir = filepath.Join(root, workdir)
			run.Env = env
			started := time.Now()
			out, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("line %d: RUN %s: %v\n%s", in.line, cmd, err, out)
			}
			t.Logf("line %d: RUN %s: %s", in.line, cmd, time.Since(started).Round(time.Millisecond))
		default:
			t.Fatalf("line %d: %s in the build stage is not supported by this test (extend it)", in.line, in.cmd)
		}
	}

	// What the runtime stage copies from the build stage exists there; the binary is static
	// and starts.
	var binary string
	for _, in := range final.instructions {
		ref, ok := in.flag("from")
		if !ok || in.cmd != "COPY" || (ref != build.name && ref != strconv.Itoa(build.index)) {
			continue
		}
		f := strings.Fields(in.rest)
		for _, src := range f[:len(f)-1] {
			if !path.IsAbs(src) {
				src = path.Join("/", src)
			}
			if _, err := os.Stat(filepath.Join(root, src)); err != nil {
				t.Fatalf("line %d: COPY --from=%s %s: the build stage did not make it: %v", in.line, ref, src, err)
			}
			if f[len(f)-1] == "/accountable" {
				binary = filepath.Join(root, src)
			}
		}
	}
	if binary == "" {
		t.Fatal("the runtime stage copies no binary to /accountable")
	}
	problem, err := staticProblem(binary)
	if err != nil {
		t.Fatalf("%s: %v", binary, err)
	}
	if problem != "" {
		t.Errorf("the binary is not statically linked: %s", problem)
	}
	// The check above can fail: the system shell is dynamically linked on the test machines.
	if sh, err := exec.LookPath("sh"); err == nil {
		if sh, err = filepath.EvalSymlinks(sh); err == nil {
			if problem, err := staticProblem(sh); err == nil && problem == "" {
				t.Logf("%s is static too: the static check is not exercised against a dynamic binary here", sh)
			}
		}
	}

	if runtime.GOOS != "linux" { // the image's platform, and the test machines'
		t.Fatalf("the image's binary is built for linux and cannot be started on %s: run the deployment check on Linux", runtime.GOOS)
	}
	// The image's ENTRYPOINT and each subcommand compose runs (and CMD's) are in its usage.
	help := exec.CommandContext(ctx, binary, "help")
	help.Env = []string{} // the runtime stage's ENV only, not this process's
	for _, in := range final.instructions {
		if in.cmd == "ENV" {
			kvs, err := parseEnv(in.rest)
			if err != nil {
				t.Fatalf("line %d: %v", in.line, err)
			}
			for _, kv := range kvs {
				help.Env = append(help.Env, kv[0]+"="+kv[1])
			}
		}
	}
	out, err := help.CombinedOutput()
	if err != nil {
		t.Fatalf("accountable help: %v\n%s", err, out)
	}
	for _, sub := range []string{"serve", "worker", "migrate"} {
		if !strings.Contains(string(out), "accountable "+sub+" ") {
			t.Errorf("accountable help does not list %q:\n%s", sub, out)
		}
	}
}

// copyFromContext does `COPY src dest` from the build context at repo: src is "." (the whole
// context) or a path in it; what .dockerignore excludes is not in the context.
func copyFromContext(t *testing.T, ignore *patternmatcher.PatternMatcher, repo, src, dest string) {
	t.Helper()
	if src != "." {
		excluded, err := ignore.MatchesOrParentMatches(src)
		if err != nil {
			t.Fatal(err)
		}
		if excluded {
			t.Fatalf("COPY %s: .dockerignore excludes it from the build context", src)
		}
		if err := os.MkdirAll(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(filepath.Join(repo, filepath.FromSlash(src)), filepath.Join(dest, path.Base(src))); err != nil {
			t.Fatalf("COPY %s: %v", src, err)
		}
		return
	}
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // removed while walking (another process's file)
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(repo, p)
		if err != nil || rel == "." {
			return err
		}
		excluded, err := ignore.MatchesOrParentMatches(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		if excluded {
			if d.IsDir() && !ignore.Exclusions() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dest, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			if err := copyFile(p, target); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("COPY .: %v", err)
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
