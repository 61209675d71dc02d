package client

import (
	"context"
	"net/http"
	"net/url"
)

// Secret is a tenant secret's name and times; its value is never returned.
type Secret struct {
	Name      string `json:"name"`
	Version   int64  `json:"version"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func secretPath(name string) string { return "/v1/secrets/" + url.PathEscape(name) }

// PutSecret creates or replaces the secret's value (PUT is idempotent: safe to re-send).
func (c *Client) PutSecret(ctx context.Context, name, value string) (*Secret, error) {
	var secret Secret
	_, err := c.do(ctx, request{method: http.MethodPut, path: secretPath(name), body: map[string]string{"value": value}}, &secret)
	if err != nil {
		return nil, err
	}
	return &secret, nil
}

func (c *Client) GetSecret(ctx context.Context, name string) (*Secret, error) {
	var secret Secret
	if _, err := c.do(ctx, request{method: http.MethodGet, path: secretPath(name)}, &secret); err != nil {
		return nil, err
	}
	return &secret, nil
}

func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: secretPath(name)}, nil)
	return err
}

// SigningSecret is a live signing secret's id and times; Secret (whsec_...) only in a create's answer.
type SigningSecret struct {
	ID        string  `json:"id"`
	CreatedAt string  `json:"created_at"`
	ExpiresAt *string `json:"expires_at"`
	Secret    string  `json:"secret,omitempty"`
}

func signingSecretPath(id string) string { return "/v1/signing-secrets/" + url.PathEscape(id) }

// CreateSigningSecret makes a new signing secret; the tenant's other live one keeps signing
// for previousExpiresIn seconds (the rotation's overlap).
func (c *Client) CreateSigningSecret(ctx context.Context, previousExpiresIn int64) (*SigningSecret, error) {
	var secret SigningSecret
	body := map[string]int64{"previous_expires_in_seconds": previousExpiresIn}
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/signing-secrets", body: body}, &secret); err != nil {
		return nil, err
	}
	return &secret, nil
}

// GetSigningSecret reads a live signing secret (an expired or deleted one is a 404).
func (c *Client) GetSigningSecret(ctx context.Context, id string) (*SigningSecret, error) {
	var secret SigningSecret
	if _, err := c.do(ctx, request{method: http.MethodGet, path: signingSecretPath(id)}, &secret); err != nil {
		return nil, err
	}
	return &secret, nil
}

func (c *Client) DeleteSigningSecret(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: signingSecretPath(id)}, nil)
	return err
}
