package provider

import (
	"context"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

// privateWrittenVersion is the secret's version right after this provider wrote its value: a
// different version at refresh means the value was replaced outside Terraform.
const privateWrittenVersion = "written_version"

var (
	_ resource.ResourceWithConfigure   = (*secretResource)(nil)
	_ resource.ResourceWithImportState = (*secretResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*secretResource)(nil)
)

type secretResource struct {
	api *client.Client
}

type secretModel struct {
	Name         types.String `tfsdk:"name"`
	Value        types.String `tfsdk:"value"`
	ValueVersion types.Int64  `tfsdk:"value_version"`
	Version      types.Int64  `tfsdk:"version"`
	CreatedAt    types.String `tfsdk:"created_at"`
	UpdatedAt    types.String `tfsdk:"updated_at"`
}

// NewSecretResource is the jobsched_secret resource.
func NewSecretResource() resource.Resource { return &secretResource{} }

func (r *secretResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_secret"
}

func (r *secretResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A tenant secret (`PUT /v1/secrets/{name}`): its value is sent as the `Authorization` " +
			"header of the tasks naming it in `secret_ref`. The value is write-only (Terraform 1.11 or later): " +
			"it is never stored in state or plan, and the API never returns it. Change `value_version` to send a " +
			"new value; it replaces the old one in place (the API's PUT, `version` + 1), so tasks naming the " +
			"secret never see it missing. A value replaced outside Terraform (the API's version moved) is " +
			"planned to be written again. Import with the secret's name (the next apply writes the value).",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "1-64 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit. Changing it replaces the secret.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"value": schema.StringAttribute{
				Required: true, Sensitive: true, WriteOnly: true,
				MarkdownDescription: "The value: 1-8192 printable ASCII characters on one line (e.g. `Bearer abc...`). " +
					"Write-only: sent on create and whenever `value_version` changes.",
			},
			"value_version": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "Any number; change it to send `value` again (a rotation).",
			},
			"version": schema.Int64Attribute{
				Computed: true, MarkdownDescription: "The API's version of the value (+1 on each replace).",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"created_at": schema.StringAttribute{
				Computed: true, MarkdownDescription: "When the secret was created.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"updated_at": schema.StringAttribute{
				Computed: true, MarkdownDescription: "When its value was last replaced.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
	}
}

func (r *secretResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.api = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func secretState(secret *client.Secret, valueVersion types.Int64) secretModel {
	return secretModel{
		Name:         types.StringValue(secret.Name),
		Value:        types.StringNull(), // write-only: never in state
		ValueVersion: valueVersion,
		Version:      types.Int64Value(secret.Version),
		CreatedAt:    types.StringValue(secret.CreatedAt),
		UpdatedAt:    types.StringValue(secret.UpdatedAt),
	}
}

// write PUTs the configured value and returns the state to save.
func (r *secretResource) write(ctx context.Context, name string, config, plan secretModel, private privateSetter) (*secretModel, error) {
	secret, err := r.api.PutSecret(ctx, name, config.Value.ValueString())
	if err != nil {
		return nil, err
	}
	// Errors here only lose the drift check: the next plan then writes the value again.
	_ = private.SetKey(ctx, privateWrittenVersion, []byte(strconv.FormatInt(secret.Version, 10)))
	model := secretState(secret, plan.ValueVersion)
	return &model, nil
}

func (r *secretResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var config, plan secretModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	model, err := r.write(ctx, plan.Name.ValueString(), config, plan, resp.Private)
	if err != nil {
		addAPIError(&resp.Diagnostics, "Storing the secret", err, map[string]bool{"name": true, "value": true})
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, model)...)
}

func (r *secretResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state secretModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	secret, err := r.api.GetSecret(ctx, state.Name.ValueString())
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Reading the secret", err, nil)
		return
	}
	model := secretState(secret, state.ValueVersion)
	resp.Diagnostics.Append(resp.State.Set(ctx, &model)...)
}

// ModifyPlan plans a write when value_version changed, or when the API's version is not the one this provider wrote: the value
// was replaced outside Terraform (or the secret was imported), and only a write restores it.
func (r *secretResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() {
		return
	}
	var state, plan secretModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	raw, diags := req.Private.GetKey(ctx, privateWrittenVersion)
	resp.Diagnostics.Append(diags...)
	written, err := strconv.ParseInt(string(raw), 10, 64)
	drifted := err != nil || written != state.Version.ValueInt64()
	if !drifted && plan.ValueVersion.Equal(state.ValueVersion) {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("version"), types.Int64Unknown())...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("updated_at"), types.StringUnknown())...)
}

func (r *secretResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var config, plan secretModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	model, err := r.write(ctx, plan.Name.ValueString(), config, plan, resp.Private)
	if err != nil {
		addAPIError(&resp.Diagnostics, "Replacing the secret's value", err, map[string]bool{"value": true})
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, model)...)
}

func (r *secretResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state secretModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.api.DeleteSecret(ctx, state.Name.ValueString()); err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, "Deleting the secret", err, nil)
	}
}

func (r *secretResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("name"), req, resp)
}
