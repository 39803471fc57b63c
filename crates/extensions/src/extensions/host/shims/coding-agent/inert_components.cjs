// pi-rpc extension host: the names of pi's interactive-mode components that
// exist in RPC mode only to be constructed (coding-agent/ui.cjs builds them as
// inert containers; pi-coding-agent.cjs exports them lazily). A leaf: no require.

"use strict";

module.exports = [
	"ArminComponent",
	"AssistantMessageComponent",
	"BashExecutionComponent",
	"BranchSummaryMessageComponent",
	"CompactionSummaryMessageComponent",
	"CustomMessageComponent",
	"ExtensionEditorComponent",
	"ExtensionInputComponent",
	"ExtensionSelectorComponent",
	"FooterComponent",
	"LoginDialogComponent",
	"ModelSelectorComponent",
	"OAuthSelectorComponent",
	"SessionSelectorComponent",
	"SettingsSelectorComponent",
	"ShowImagesSelectorComponent",
	"SkillInvocationMessageComponent",
	"ThemeSelectorComponent",
	"ThinkingSelectorComponent",
	"ToolExecutionComponent",
	"TreeSelectorComponent",
	"UserMessageComponent",
	"UserMessageSelectorComponent",
];
