package accountable_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
)

func TestRegisterWebhookValidate(t *testing.T) {
	secret := func(s string) *string { return &s }
	ok := accountable.RegisterWebhook{URL: "https://hooks.example.com/in?x=1", EventTypes: []string{"work.completed", "receipt.imported"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid registration: %v", err)
	}
	all := accountable.RegisterWebhook{URL: "http://127.0.0.1:9/", EventTypes: []string{"*"}, Secret: secret("0123456789abcdef")}
	if err := all.Validate(); err != nil {
		t.Fatalf("valid registration: %v", err)
	}
	for _, c := range []struct {
		name string
		r    accountable.RegisterWebhook
		path string
	}{
		{"relative URL", accountable.RegisterWebhook{URL: "/hooks", EventTypes: []string{"*"}}, "/url"},
		{"other scheme", accountable.RegisterWebhook{URL: "ftp://example.com/", EventTypes: []string{"*"}}, "/url"},
		{"credentials", accountable.RegisterWebhook{URL: "https://u:p@example.com/", EventTypes: []string{"*"}}, "/url"},
		{"fragment", accountable.RegisterWebhook{URL: "https://example.com/#x", EventTypes: []string{"*"}}, "/url"},
		{"long URL", accountable.RegisterWebhook{URL: "https://example.com/" + strings.Repeat("a", 2048), EventTypes: []string{"*"}}, "/url"},
		{"no event types", accountable.RegisterWebhook{URL: "https://example.com/", EventTypes: nil}, "/event_types"},
		{"bad event type", accountable.RegisterWebhook{URL: "https://example.com/", EventTypes: []string{"Work Completed"}}, "/event_types/0"},
		{"dotted edge", accountable.RegisterWebhook{URL: "https://example.com/", EventTypes: []string{"work."}}, "/event_types/0"},
		{"twice", accountable.RegisterWebhook{URL: "https://example.com/", EventTypes: []string{"work.created", "work.created"}}, "/event_types/1"},
		{"short secret", accountable.RegisterWebhook{URL: "https://example.com/", EventTypes: []string{"*"}, Secret: secret("short")}, "/secret"},
		{"secret with a space", accountable.RegisterWebhook{URL: "https://example.com/", EventTypes: []string{"*"}, Secret: secret("0123456789 abcdef")}, "/secret"},
	} {
		err := c.r.Validate()
		var ae *accountable.Error
		if !errors.As(err, &ae) || ae.Code != accountable.ECodeValidationFailed || !strings.Contains(errIssuesText(ae), `"`+c.path+`"`) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func errIssuesText(e *accountable.Error) string {
	var b strings.Builder
	if is, ok := e.Details["issues"].(accountable.Issues); ok {
		for _, i := range is {
			b.WriteString(`"` + i.Path + `" `)
		}
	}
	return b.String()
}

func TestCheckWebhookCapacity(t *testing.T) {
	for _, c := range []struct {
		active, limit int
		refused       bool
	}{{0, 20, false}, {19, 20, false}, {20, 20, true}, {25, 20, true}, {0, 1, false}, {1, 1, true}} {
		err := accountable.CheckWebhookCapacity(c.active, c.limit)
		if (err != nil) != c.refused {
			t.Fatalf("%d of %d: %v", c.active, c.limit, err)
		}
		if err == nil {
			continue
		}
		var e *accountable.Error
		if !errors.As(err, &e) || e.Code != accountable.ECodeWebhookLimitReached || accountable.ErrorStatus(e.Code) != 409 ||
			e.Details["limit"] != c.limit || e.Details["active"] != c.active {
			t.Fatalf("%d of %d: %#v", c.active, c.limit, err)
		}
	}
}

func TestWebhookWants(t *testing.T) {
	if !accountable.WebhookWants([]string{"*"}, "work.created") || !accountable.WebhookWants([]string{"work.created"}, "work.created") ||
		accountable.WebhookWants([]string{"work.completed"}, "work.created") {
		t.Fatal("event type matching")
	}
}
