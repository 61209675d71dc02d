// Package provider is the jobsched Terraform provider: tasks, secrets and signing secrets as code.
package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

// Address is the provider's registry source address.
const Address = "registry.terraform.io/jobsched/jobsched"

// Environment variables read when the provider block leaves a setting out.
const (
	EnvURL          = "JOBSCHED_URL"
	EnvToken        = "JOBSCHED_TOKEN"
	EnvTokenCommand = "JOBSCHED_TOKEN_COMMAND"
)

// tokenCommandTimeout bounds a token command (an IdP's CLI, a vault read).
const tokenCommandTimeout = 30 * time.Second

type jobschedProvider struct {
	version string
}

type providerModel struct {
	Endpoint     types.String `tfsdk:"endpoint"`
	Token        types.String `tfsdk:"token"`
	TokenCommand types.List   `tfsdk:"token_command"`
}

// New returns the provider factory for providerserver.Serve and the acceptance tests.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &jobschedProvider{version: version} }
}

func (p *jobschedProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "jobsched"
	resp.Version = p.version
}

func (p *jobschedProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Manage jobsched tasks, secrets and signing secrets " +
			"through its tenant API (`/v1`). The tenant is the one named by the token. How-to: `docs/terraform.md` in the jobsched repository.",
		Attributes: map[string]schema.Attribute{
			"endpoint": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The API's root URL, e.g. `https://jobsched.example.com` (a trailing `/v1` is " +
					"accepted). Default: the `" + EnvURL + "` environment variable.",
			},
			"token": schema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				MarkdownDescription: "A bearer token (JWT) naming the tenant. Default: the `" + EnvToken +
					"` environment variable. Conflicts with `token_command`.",
			},
			"token_command": schema.ListAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "A command (program and arguments, run without a shell) whose standard output " +
					"is the token, e.g. `[\"vault\", \"read\", \"-field=token\", \"jobsched/ci\"]`: for short-lived " +
					"tokens. Default: `" + EnvTokenCommand + "`, run with `sh -c`.",
			},
		},
	}
}

func (p *jobschedProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var config providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if config.Endpoint.IsUnknown() || config.Token.IsUnknown() || config.TokenCommand.IsUnknown() {
		// Known only after other resources apply: configured on a later pass.
		return
	}
	endpoint := config.Endpoint.ValueString()
	if endpoint == "" {
		endpoint = os.Getenv(EnvURL)
	}
	if endpoint == "" {
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "No jobsched endpoint",
			"Set endpoint in the provider block or the "+EnvURL+" environment variable.")
		return
	}
	var command []string
	resp.Diagnostics.Append(config.TokenCommand.ElementsAs(ctx, &command, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	token, where, err := resolveToken(ctx, config.Token.ValueString(), command)
	if err != nil {
		resp.Diagnostics.AddAttributeError(where, "No jobsched token", err.Error())
		return
	}
	api, err := client.New(endpoint, token, "terraform-provider-jobsched/"+p.version)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "Invalid jobsched endpoint", err.Error())
		return
	}
	if err := api.Ping(ctx); err != nil {
		addConnectError(&resp.Diagnostics, api.Endpoint(), err)
		return
	}
	resp.ResourceData = api
	resp.DataSourceData = api
}

// resolveToken picks the token: the attribute, the command, then the environment.
func resolveToken(ctx context.Context, token string, command []string) (string, path.Path, error) {
	if token != "" && len(command) > 0 {
		return "", path.Root("token"), errors.New("set token or token_command, not both")
	}
	if token != "" {
		return token, path.Root("token"), nil
	}
	if len(command) > 0 {
		token, err := runTokenCommand(ctx, command)
		return token, path.Root("token_command"), err
	}
	if token := strings.TrimSpace(os.Getenv(EnvToken)); token != "" {
		return token, path.Root("token"), nil
	}
	if line := strings.TrimSpace(os.Getenv(EnvTokenCommand)); line != "" {
		token, err := runTokenCommand(ctx, []string{"sh", "-c", line})
		return token, path.Root("token_command"), err
	}
	return "", path.Root("token"), fmt.Errorf("set token or token_command in the provider block, or %s or %s",
		EnvToken, EnvTokenCommand)
}

func runTokenCommand(ctx context.Context, command []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, tokenCommandTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// stderr only: stdout may hold part of a token.
		return "", fmt.Errorf("token command %q failed: %v: %s", command[0], err, strings.TrimSpace(stderr.String()))
	}
	token := strings.TrimSpace(stdout.String())
	if token == "" {
		return "", fmt.Errorf("token command %q printed nothing", command[0])
	}
	return token, nil
}

func (p *jobschedProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewTaskResource, NewSecretResource, NewSigningSecretResource, NewCalendarResource}
}

func (p *jobschedProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewTaskDataSource, NewTasksDataSource}
}

// clientFrom takes the provider's client out of a Configure request; nil before the provider is configured.
func clientFrom(data any, diags interface{ AddError(string, string) }) *client.Client {
	if data == nil {
		return nil
	}
	api, ok := data.(*client.Client)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("expected *client.Client, got %T", data))
		return nil
	}
	return api
}
