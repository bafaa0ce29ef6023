package api_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// The settings page in headless Chromium (CHROMIUM_PATH, which make test sets with
// scripts/chromium.sh): sign in, create a key, read it from the page, use it against the
// API, revoke it, and see the API answer 401; then revoke the key a member made in their
// own workspace, which acts in this one too. SCREENSHOT writes the page with its new key
// to that file (docs/auth.md's picture: SCREENSHOT=docs/settings-api-keys.png).
func TestSettingsPageInChromium(t *testing.T) {
	e := newEnv(t, nil)
	ten := newPerson(t, e)
	member := storetest.NewTenant(t, e.db)
	if _, err := e.db.CreateUser(context.Background(), store.CreateKeyRequest{UserEmail: member.Principal.UserEmail, WorkspaceID: ten.Principal.WorkspaceID}); err != nil {
		t.Fatal(err)
	}
	ctx := newChromium(t)

	var key, location string
	var screenshot []byte
	err := chromedp.Run(ctx,
		chromedp.Navigate(e.base+"/settings/api-keys"), // signed out: to the sign-in page
		chromedp.WaitVisible(`#email`, chromedp.ByID),
		chromedp.SendKeys(`#email`, ten.Principal.UserEmail, chromedp.ByID),
		chromedp.SendKeys(`#password`, testPassword, chromedp.ByID),
		chromedp.Click(`#sign-in`, chromedp.ByID),
		chromedp.WaitVisible(`#key-name`, chromedp.ByID),
		chromedp.Location(&location),
		chromedp.SendKeys(`#key-name`, "From Chromium", chromedp.ByID),
		chromedp.Click(`#create-key`, chromedp.ByID),
		chromedp.WaitVisible(`#new-key`, chromedp.ByID),
		chromedp.Text(`#new-key`, &key, chromedp.ByID),
		chromedp.FullScreenshot(&screenshot, 100), // 100: PNG
	)
	if err != nil {
		t.Fatal(err)
	}
	key = strings.TrimSpace(key)
	if !strings.HasSuffix(location, "/settings/api-keys") || !strings.HasPrefix(key, "svk_") {
		t.Fatalf("after sign-in at %s, the page showed key %q", location, key)
	}
	if path := os.Getenv("SCREENSHOT"); path != "" {
		if !filepath.IsAbs(path) {
			path = filepath.Join("..", path) // relative to the repository, not to api/
		}
		if err := os.WriteFile(path, screenshot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, e.do(request{method: "GET", path: "/credential", key: key}), http.StatusOK, "")

	prefix := key[:12]
	err = chromedp.Run(ctx,
		chromedp.Click(`tr[data-prefix="`+prefix+`"] button.revoke`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-prefix="`+prefix+`"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`tr[data-prefix="`+prefix+`"] button.revoke`, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	if r := e.do(request{method: "GET", path: "/credential", key: key}); r.status != http.StatusUnauthorized {
		t.Fatalf("the key revoked on the page answered %d", r.status)
	}

	inHere := request{method: "GET", path: "/work", key: member.Key, query: "workspace_id=" + ten.Principal.WorkspaceID}
	expect(t, e.do(inHere), http.StatusOK, "")
	var owner string
	row := `tr[data-prefix="` + member.Principal.KeyPrefix + `"]`
	err = chromedp.Run(ctx,
		chromedp.Text(row+` td.owner`, &owner, chromedp.ByQuery),
		chromedp.Click(row+` button.revoke`, chromedp.ByQuery),
		chromedp.WaitVisible(`#key-name`, chromedp.ByID),
		chromedp.WaitNotPresent(row, chromedp.ByQuery), // a revoked key of another workspace acts nowhere: not listed
	)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(owner) != member.Principal.UserEmail {
		t.Fatalf("the member's key is listed as %q's", owner)
	}
	if r := e.do(inHere); r.status != http.StatusUnauthorized {
		t.Fatalf("the member's key revoked on this workspace's page answered %d", r.status)
	}
}

// newChromium starts headless Chromium (CHROMIUM_PATH) for the test, with a context that
// ends with it (and at most a minute after it starts).
func newChromium(t *testing.T) context.Context {
	t.Helper()
	browserPath := os.Getenv("CHROMIUM_PATH")
	if browserPath == "" {
		t.Fatal("CHROMIUM_PATH is not set: run the tests with `make test`, which finds or installs Chromium (scripts/chromium.sh)")
	}
	// The profile's directory is removed when the test ends, retried: Chromium's helper
	// processes may still be writing to it for a moment after the browser has exited
	// (t.TempDir would fail the test over it).
	profile, err := os.MkdirTemp("", "accountable-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("left %s behind", profile)
	})
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browserPath), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(profile), chromedp.WindowSize(1000, 720))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}
