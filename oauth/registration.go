package oauth

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/accountablework/accountable"
)

// Dynamic client registration (RFC 7591): what a client may register with, and the rules
// a registration must meet before RegisterClient stores it.

// Token endpoint authentication methods a client may register with: a public client
// (none: it proves itself with PKCE) or a confidential one with a client secret.
const (
	ClientAuthNone   = "none"
	ClientAuthBasic  = "client_secret_basic"
	ClientAuthPost   = "client_secret_post"
	GrantAuthCode    = "authorization_code"
	GrantRefresh     = "refresh_token"
	ResponseTypeCode = "code"
)

// ClientRegistration is a client's registration request (RFC 7591 section 2), as far as
// this service uses it.
type ClientRegistration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// Registration limits.
const (
	maxRedirectURIs     = 10
	maxClientNameLength = 100
	maxURILength        = 2000
)

// Normalize fills the defaults of RFC 7591 (authorization_code, code,
// client_secret_basic) and names a nameless client after its first redirect's host.
func (r *ClientRegistration) Normalize() {
	if len(r.GrantTypes) == 0 {
		r.GrantTypes = []string{GrantAuthCode}
	}
	if len(r.ResponseTypes) == 0 {
		r.ResponseTypes = []string{ResponseTypeCode}
	}
	if r.TokenEndpointAuthMethod == "" {
		r.TokenEndpointAuthMethod = ClientAuthBasic
	}
	r.ClientName = strings.TrimSpace(r.ClientName)
	if r.ClientName == "" && len(r.RedirectURIs) > 0 {
		if u, err := url.Parse(r.RedirectURIs[0]); err == nil {
			r.ClientName = u.Scheme + "://" + u.Host
		}
	}
}

// Validate checks a normalized registration: redirect URIs are absolute, without
// fragment, and either https, http on a loopback address (a native app's local callback,
// RFC 8252) or a private-use scheme (com.example.app:/cb); only the authorization code
// grant (and refresh) with response type code.
func (r ClientRegistration) Validate() error {
	var issues []accountable.Issue
	if len(r.RedirectURIs) == 0 {
		issues = append(issues, accountable.Issue{Path: "redirect_uris", Message: "at least one redirect URI is required"})
	}
	if len(r.RedirectURIs) > maxRedirectURIs {
		issues = append(issues, accountable.Issue{Path: "redirect_uris", Message: "at most 10 redirect URIs"})
	}
	for i, raw := range r.RedirectURIs {
		if msg := redirectURIProblem(raw); msg != "" {
			issues = append(issues, accountable.Issue{Path: "redirect_uris[" + strconv.Itoa(i) + "]", Message: msg})
		}
	}
	for _, g := range r.GrantTypes {
		if g != GrantAuthCode && g != GrantRefresh {
			issues = append(issues, accountable.Issue{Path: "grant_types", Message: "only authorization_code and refresh_token are supported, not " + g})
		}
	}
	if !slices.Contains(r.GrantTypes, GrantAuthCode) {
		issues = append(issues, accountable.Issue{Path: "grant_types", Message: "must include authorization_code"})
	}
	for _, t := range r.ResponseTypes {
		if t != ResponseTypeCode {
			issues = append(issues, accountable.Issue{Path: "response_types", Message: "only code is supported, not " + t})
		}
	}
	switch r.TokenEndpointAuthMethod {
	case ClientAuthNone, ClientAuthBasic, ClientAuthPost:
	default:
		issues = append(issues, accountable.Issue{Path: "token_endpoint_auth_method", Message: "must be none, client_secret_basic or client_secret_post"})
	}
	if len(r.ClientName) > maxClientNameLength {
		issues = append(issues, accountable.Issue{Path: "client_name", Message: "at most 100 characters"})
	}
	// The name is shown on the consent screen and is the agent the ledger records: no
	// control, format or bidirectional characters to disguise it, and not a name that
	// would read as acting for someone in particular.
	if strings.IndexFunc(r.ClientName, func(c rune) bool { return unicode.IsControl(c) || unicode.Is(unicode.Cf, c) }) >= 0 {
		issues = append(issues, accountable.Issue{Path: "client_name", Message: "must not contain control or formatting characters"})
	}
	if strings.Contains(strings.ToLower(r.ClientName), " for user ") {
		issues = append(issues, accountable.Issue{Path: "client_name", Message: `must not contain " for user "`})
	}
	if u := r.ClientURI; u != "" {
		if p, err := url.Parse(u); err != nil || len(u) > maxURILength || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			issues = append(issues, accountable.Issue{Path: "client_uri", Message: "must be an http(s) URL"})
		}
	}
	if _, unknown := parseScopeParam(r.Scope); len(unknown) > 0 {
		issues = append(issues, accountable.Issue{Path: "scope", Message: "unknown scopes: " + strings.Join(unknown, " ")})
	}
	if len(issues) > 0 {
		return accountable.ValidationError(issues...)
	}
	return nil
}

func redirectURIProblem(raw string) string {
	if len(raw) > maxURILength {
		return "at most 2000 characters"
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return "must be an absolute URI"
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "must not have a fragment"
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return "must name a host"
		}
	case "http":
		if !isLoopbackHost(u.Hostname()) {
			return "http is allowed only on a loopback address (localhost, 127.0.0.1, [::1]); use https"
		}
	case "javascript", "data", "file", "vbscript":
		return "scheme " + u.Scheme + " is not allowed"
	default: // a private-use scheme of a native app: reverse-domain, with a dot (RFC 8252 section 7.1)
		if !strings.Contains(u.Scheme, ".") {
			return "a private-use scheme must be a reverse domain name (com.example.app)"
		}
	}
	return ""
}

// isLoopbackHost reports whether host is localhost or a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// parseScopeParam splits an OAuth scope parameter and reports the scopes this service
// does not know.
func parseScopeParam(param string) (scopes, unknown []string) {
	for _, sc := range strings.Fields(param) {
		if !slices.Contains(accountable.ScopesSupported, sc) {
			unknown = append(unknown, sc)
		} else if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	return scopes, unknown
}
