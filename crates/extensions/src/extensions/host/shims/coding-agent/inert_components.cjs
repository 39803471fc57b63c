// pi-rpc extension host: pi's interactive-mode components that exist in RPC
// mode only to be constructed (coding-agent/ui.cjs builds them from this
// table; pi-coding-agent.cjs exports them lazily by its keys). A leaf: no require.
//
// Each row: the pi-tui class pi's component extends ("Container", "Box", or
// null when it implements Component itself), then its public members as pi
// 1.6.0's `.d.ts` declares them. A member is inert, by its name unless a kind
// follows `=`:
//   set<X>(v)            stores v as this.<x>          (kind store:<field> names the field)
//   render / invalidate / handleMouse   the base class's (an empty one renders []); [] / nothing without one
//   focused              a get/set accessor that stores
//   any other method     does nothing
//   get:<json>           a getter answering <json>     field:<json>  an instance property
//   arg:<i>              answers the constructor's argument i
//   child:<Class>        answers an empty pi-tui <Class> (made once)
//   signal               an AbortSignal nobody aborts
//   ask                  a promise refused at once (nobody can answer in RPC mode)
//   append / output      appendOutput keeps the text (ANSI codes out, \r\n as \n), getOutput answers it

"use strict";

const SETTERS = "setExpanded setOutputPad";
module.exports = {
	ArminComponent: [null, "invalidate render dispose"],
	AssistantMessageComponent: ["Container", "invalidate setHideThinkingBlock setHiddenThinkingLabel setOutputPad render updateContent=store:message"],
	BashExecutionComponent: ["Container", `${SETTERS} invalidate appendOutput=append setComplete=store:exitCode getOutput=output getCommand=arg:0`],
	BranchSummaryMessageComponent: ["Box", `${SETTERS} invalidate`],
	CompactionSummaryMessageComponent: ["Box", `${SETTERS} invalidate`],
	CustomMessageComponent: ["Container", `${SETTERS} invalidate`],
	ExtensionEditorComponent: ["Container", "focused handleInput"],
	ExtensionInputComponent: ["Container", "focused handleInput dispose"],
	ExtensionSelectorComponent: ["Container", "handleInput dispose"],
	FooterComponent: [null, "setSession setAutoCompactEnabled invalidate dispose render"],
	LoginDialogComponent: ["Container", "focused signal=signal showAuth showDeviceCode showManualInput=ask showPrompt=ask showDetails showInfo showWaiting showProgress handleInput"],
	ModelSelectorComponent: ["Container", "capturesViewportInput=field:true focused dispose handleInput getSearchInput=child:Input"],
	OAuthSelectorComponent: ["Container", "capturesViewportInput=field:true focused render dispose handleInput"],
	SessionSelectorComponent: ["Container", "capturesViewportInput=get:true handleInput focused getSessionList=child:Container"],
	SettingsSelectorComponent: ["Container", "getSettingsList=child:SettingsList"],
	ShowImagesSelectorComponent: ["Container", "getSelectList=child:SelectList"],
	SkillInvocationMessageComponent: ["Box", `${SETTERS} invalidate`],
	ThemeSelectorComponent: ["Container", "getSelectList=child:SelectList"],
	ThinkingSelectorComponent: ["Container", "focused handleInput getSelectList=child:SelectList"],
	ToolExecutionComponent: ["Container", `updateArgs=store:args markExecutionStarted setArgsComplete updateResult=store:result ${SETTERS} setShowImages setImageWidthCells invalidate render handleMouse`],
	TreeSelectorComponent: ["Container", "onCopy=field:undefined focused capturesViewportInput=get:true handleInput getTreeList=child:Container"],
	UserMessageComponent: ["Container", "setOutputPad render"],
	UserMessageSelectorComponent: ["Container", "getMessageList=child:Container"],
};
