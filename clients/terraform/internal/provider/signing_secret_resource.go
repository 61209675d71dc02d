package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

// DefaultPreviousExpiresInSeconds is the API's default overlap of a rotation (signing/services.py);
// the acceptance tests compare it with /v1/schema.
const DefaultPreviousExpiresInSeconds = 86400

var (
	_ resource.ResourceWithConfigure   = (*signingSecretResource)(nil)
	_ resource.ResourceWithImportState = (*signingSecretResource)(nil)
)

type signingSecretResource struct {
	api *client.Client
}

type signingSecretModel struct {
	ID                       types.String `tfsdk:"id"`
	PreviousExpiresInSeconds types.Int64  `tfsdk:"previous_expires_in_seconds"`
	RotationTriggers         types.Map    `tfsdk:"rotation_triggers"`
	Secret                   types.String `tfsdk:"secret"`
	CreatedAt                types.String `tfsdk:"created_at"`
	ExpiresAt                types.String `tfsdk:"expires_at"`
}

// NewSigningSecretResource is the jobsched_signing_secret resource.
func NewSigningSecretResource() resource.Resource { return &signingSecretResource{} }

func (r *signingSecretResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_signing_secret"
}

func (r *signingSecretResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A signing secret (`POST /v1/signing-secrets`): every call of the tenant's tasks is signed " +
			"with each live one (`webhook-signature`, Standard Webhooks). The `whsec_...` value is shown once, at " +
			"creation, and kept in state as a sensitive attribute. **Rotation**: change `rotation_triggers` with " +
			"`lifecycle { create_before_destroy = true }`: the new secret is created first, the API keeps the " +
			"previous one signing for `previous_expires_in_seconds`, and destroying a secret that is already " +
			"rotating out (its `expires_at` is set) leaves it to expire then instead of deleting it at once. " +
			"A tenant has at most two live signing secrets. Import with the id (the value is not readable then).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The signing secret's id.", PlanModifiers: keep,
			},
			"previous_expires_in_seconds": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(DefaultPreviousExpiresInSeconds),
				MarkdownDescription: fmt.Sprintf("At creation: how long the tenant's current secret keeps signing "+
					"beside this one, 0-604800 (0: stop now). Default: `%d`. A change affects the next rotation only.",
					DefaultPreviousExpiresInSeconds),
			},
			"rotation_triggers": schema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Arbitrary values; changing any of them replaces the secret (a rotation).",
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
			},
			"secret": schema.StringAttribute{
				Computed: true, Sensitive: true, PlanModifiers: keep,
				MarkdownDescription: "The `whsec_...` value for receivers to verify with (null after an import).",
			},
			"created_at": schema.StringAttribute{
				Computed: true, MarkdownDescription: "When it was created.", PlanModifiers: keep,
			},
			"expires_at": schema.StringAttribute{
				Computed: true, PlanModifiers: keep,
				MarkdownDescription: "When it stops signing (set when a newer secret rotates it out); null: no end.",
			},
		},
	}
}

func (r *signingSecretResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.api = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *signingSecretResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan signingSecretModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	secret, err := r.api.CreateSigningSecret(ctx, plan.PreviousExpiresInSeconds.ValueInt64())
	if err != nil {
		addAPIError(&resp.Diagnostics, "Creating the signing secret", err, map[string]bool{"previous_expires_in_seconds": true})
		return
	}
	plan.ID = types.StringValue(secret.ID)
	plan.Secret = types.StringValue(secret.Secret)
	plan.CreatedAt = types.StringValue(secret.CreatedAt)
	plan.ExpiresAt = types.StringPointerValue(secret.ExpiresAt)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *signingSecretResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state signingSecretModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	secret, err := r.api.GetSigningSecret(ctx, state.ID.ValueString())
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx) // expired or deleted: no longer signs
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Reading the signing secret", err, nil)
		return
	}
	state.CreatedAt = types.StringValue(secret.CreatedAt)
	state.ExpiresAt = types.StringPointerValue(secret.ExpiresAt)
	if state.PreviousExpiresInSeconds.IsNull() { // after an import
		state.PreviousExpiresInSeconds = types.Int64Value(DefaultPreviousExpiresInSeconds)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update only records previous_expires_in_seconds: it matters at creation, and nothing else updates in place.
func (r *signingSecretResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan signingSecretModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *signingSecretResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state signingSecretModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Read it now, not from state: a create_before_destroy rotation set its expiry a moment ago.
	secret, err := r.api.GetSigningSecret(ctx, state.ID.ValueString())
	if client.IsNotFound(err) {
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Reading the signing secret", err, nil)
		return
	}
	if secret.ExpiresAt != nil {
		resp.Diagnostics.AddWarning("Signing secret left to expire",
			fmt.Sprintf("Signing secret %s is rotating out: it keeps signing until %s, then expires by itself "+
				"(delete it through the API to stop it sooner).", secret.ID, *secret.ExpiresAt))
		return
	}
	if err := r.api.DeleteSigningSecret(ctx, secret.ID); err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, "Deleting the signing secret", err, nil)
	}
}

func (r *signingSecretResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
