/** The status bar item: index state and note count, and the window progress of builds. */
import * as vscode from 'vscode';
import type { ProgressValue } from './client';
import { Commands } from './constants';
import { type BuildProgress, type ClientPhase, type StatusResult, summarize } from './indexState';

interface ActiveBuild extends BuildProgress {
  report?: (value: { message?: string; increment?: number }) => void;
  finish?: () => void;
  lastPct: number;
}

export class IndexStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private phase: ClientPhase = 'starting';
  private status: StatusResult | undefined;
  private readonly builds = new Map<string | number, ActiveBuild>();

  constructor() {
    this.item = vscode.window.createStatusBarItem('engram.status', vscode.StatusBarAlignment.Left, 10);
    this.item.name = 'Engram index';
    this.item.command = Commands.showStatus;
    this.render();
    this.item.show();
  }

  get lastStatus(): StatusResult | undefined {
    return this.status;
  }

  setPhase(phase: ClientPhase): void {
    this.phase = phase;
    if (phase !== 'running') {
      this.status = undefined;
      this.endAllBuilds();
    }
    this.render();
  }

  setStatus(status: StatusResult): void {
    this.status = status;
    this.render();
  }

  /** A work-done progress value from the server (a build of a vault's index). */
  progress(token: string | number, value: ProgressValue): void {
    if (value.kind === 'begin') {
      const build: ActiveBuild = { title: value.title, message: value.message, percentage: value.percentage, lastPct: value.percentage ?? 0 };
      this.builds.set(token, build);
      void vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: value.title },
        (progress) =>
          new Promise<void>((resolve) => {
            build.report = (v) => progress.report(v);
            build.finish = resolve;
          }),
      );
    } else if (value.kind === 'report') {
      const build = this.builds.get(token);
      if (build) {
        build.message = value.message ?? build.message;
        if (value.percentage !== undefined) {
          build.report?.({ message: value.message, increment: value.percentage - build.lastPct });
          build.percentage = value.percentage;
          build.lastPct = value.percentage;
        } else {
          build.report?.({ message: value.message });
        }
      }
    } else {
      this.builds.get(token)?.finish?.();
      this.builds.delete(token);
    }
    this.render();
  }

  private endAllBuilds(): void {
    for (const build of this.builds.values()) {
      build.finish?.();
    }
    this.builds.clear();
  }

  private render(): void {
    const view = summarize(this.phase, this.status, [...this.builds.values()]);
    this.item.text = view.text;
    this.item.tooltip = `${view.tooltip}\n\nClick for details.`;
    this.item.accessibilityInformation = { label: view.text.replace(/\$\([^)]*\)\s*/g, '') };
    this.item.backgroundColor =
      view.severity === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : view.severity === 'warning' && this.phase !== 'running'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }

  dispose(): void {
    this.endAllBuilds();
    this.item.dispose();
  }
}
