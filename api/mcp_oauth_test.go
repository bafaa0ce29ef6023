package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// An MCP client built on the official Go SDK connects to the service with nothing but its
// URL: the 401 of /mcp leads it to the protected resource metadata, the authorization
// server's metadata and dynamic registration; it sends its user to the browser (headless
// Chromium: sign in, the consent screen naming the client and the workspace, allow) with
// PKCE, exchanges the code, lists the tools and completes work with them; REST then shows
// the receipt and the ledger event of an agent acting for the user. The token refreshes.
func TestMCPClientConnectsThroughOAuthInChromium(t *testing.T) {
	e := newEnv(t, nil, withSiteURLOfListener)
	ten := newPerson(t, e)
	browser := newChromium(t)

	// The client's local callback, as a desktop or IDE client has one.
	answers := make(chan url.Values, 1)
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case answers <- r.URL.Query():
		default:
		}
		fmt.Fprint(w, `<!doctype html><p id="done">Connected. You can close this window.</p>`)
	}))
	t.Cleanup(callback.Close)

	var clientName, workspaceName, scopes string
	fetchCode := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		err := chromedp.Run(browser,
			chromedp.Navigate(args.URL), // signed out: the sign-in page, then back to the consent
			chromedp.WaitVisible(`#email`, chromedp.ByID),
			chromedp.SendKeys(`#email`, ten.Principal.UserEmail, chromedp.ByID),
			chromedp.SendKeys(`#password`, testPassword, chromedp.ByID),
			chromedp.Click(`#sign-in`, chromedp.ByID),
			chromedp.WaitVisible(`#allow`, chromedp.ByID),
			chromedp.Text(`#client-name`, &clientName, chromedp.ByID),
			chromedp.Text(`#workspace-name`, &workspaceName, chromedp.ByID),
			chromedp.Text(`#scopes`, &scopes, chromedp.ByID),
			chromedp.Click(`#allow`, chromedp.ByID),
			chromedp.WaitVisible(`#done`, chromedp.ByID),
		)
		if err != nil {
			return nil, err
		}
		select {
		case q := <-answers:
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("the callback was not called")
		}
	}
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "E2E Agent", RedirectURIs: []string{callback.URL + "/callback"}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}}},
		AuthorizationCodeFetcher: fetchCode,
		RequestRefreshToken:      true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-agent", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.base + "/mcp", OAuthHandler: handler}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	ws, _ := e.db.GetWorkspace(ctx, ten.Principal.WorkspaceID)
	if clientName != "E2E Agent" || workspaceName != ws.Name || !strings.Contains(scopes, "work:write") {
		t.Fatalf("the consent screen showed client %q, workspace %q, scopes %q", clientName, workspaceName, scopes)
	}

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"create_work", "get_work", "complete_work", "page_events"} {
		if !names[want] {
			t.Fatalf("no tool %s among %v", want, names)
		}
	}

	created := callTool(t, ctx, session, "create_work", map[string]any{"title": "Done by an MCP client", "idempotency_key": "e2e-create-1"})
	taskID := created["data"].(map[string]any)["taskId"].(string)
	read := callTool(t, ctx, session, "get_work", map[string]any{"taskId": taskID})
	token := read["data"].(map[string]any)["concurrency"].(map[string]any)["version_token"]
	done := callTool(t, ctx, session, "complete_work", map[string]any{"taskId": taskID, "version_token": token, "idempotency_key": "e2e-complete-1",
		"summary": "Completed over MCP", "evidence": map[string]any{"links": []string{"https://example.test/pr/7"}}})
	receiptID := done["data"].(map[string]any)["receiptId"]

	// REST, with the person's own key: the receipt, and the ledger's agent acting for them.
	task := getWork(t, e, ten.Key, taskID)
	if task["status"] != "completed" || receiptID == nil {
		t.Fatalf("after complete_work: %v (receipt %v)", task, receiptID)
	}
	events := e.streamEvents(ten.Key, "event_type=work.completed", 1)
	if last := events[len(events)-1]; last["aggregateId"] != taskID || last["actorType"] != "agent" ||
		last["actorId"] != "E2E Agent for user "+ten.Principal.UserID {
		t.Fatalf("the completion on the ledger: %v", last)
	}

	// The client holds a refresh token and can rotate it.
	ts, err := handler.TokenSource(ctx)
	if err != nil || ts == nil {
		t.Fatalf("token source: %v", err)
	}
	tok, err := ts.Token()
	if err != nil || tok.RefreshToken == "" {
		t.Fatalf("the client's token has no refresh token: %v %v", tok, err)
	}
}

// callTool calls a tool and returns its structured content, failing on a tool error.
func callTool(t *testing.T, ctx context.Context, session *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		t.Fatalf("%s answered an error: %s", name, text.String())
	}
	out, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("%s: structured content %T", name, res.StructuredContent)
	}
	return out
}
