// What a cdp_command telemetry event keeps of a client's command: pure logic, no daemon.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { controlMethod, describeCommand } from '../../daemon/http/gateways/cdp-commands.js';

const reported = (message: object): Record<string, unknown> | undefined => {
  const text = Buffer.from(JSON.stringify(message));
  const method = controlMethod(text);
  return method ? describeCommand(text, method) : undefined;
};

test('browser-control commands are found by their method; other traffic is not', () => {
  assert.equal(controlMethod(Buffer.from('{"id":1,"method":"Page.navigate","params":{"url":"https://a.example/"}}')), 'Page.navigate');
  assert.equal(controlMethod(Buffer.from('{"id":2,"method": "Input.insertText","params":{"text":"x"}}')), 'Input.insertText');
  for (const other of ['{"id":3,"method":"Runtime.evaluate","params":{}}', '{"id":4,"method":"DOM.getDocument"}', '{"id":5}', 'not json', '']) {
    assert.equal(controlMethod(Buffer.from(other)), undefined, other);
  }
  // A "method" inside the params of another command is not the command's own.
  const nested = Buffer.from('{"id":6,"params":{"expression":"x","method":"Page.navigate"},"method":"Runtime.evaluate"}');
  const method = controlMethod(nested);
  assert.equal(method, 'Page.navigate');
  assert.equal(describeCommand(nested, method!), undefined);
});

test('secrets never reach an event: typed text is a length, a URL its scheme, files a count; numbers, flags, enums and ids stay', () => {
  assert.deepEqual(reported({ id: 7, method: 'Input.insertText', params: { text: 'hunter2 ✓' }, sessionId: 'S1' }), {
    method: 'Input.insertText',
    command_id: 7,
    session_id: 'S1',
    text_length: 9,
  });
  assert.deepEqual(
    reported({ id: 8, method: 'Page.navigate', params: { url: 'https://user:pw@bank.example/?token=abc', referrer: 'https://x/', frameId: 'F' } }),
    {
      method: 'Page.navigate',
      command_id: 8,
      url_scheme: 'https',
      referrer_present: true,
      frame_id: 'F',
    },
  );
  assert.deepEqual(
    reported({
      id: 9,
      method: 'Input.dispatchMouseEvent',
      params: { type: 'mousePressed', x: 10.5, y: 20, button: 'left', clickCount: 1, modifiers: 2 },
    }),
    {
      method: 'Input.dispatchMouseEvent',
      command_id: 9,
      event_type: 'mousePressed',
      x: 10.5,
      y: 20,
      button: 'left',
      click_count: 1,
      modifiers: 2,
    },
  );
  // A key that types a character is not named; one that commands the page is.
  assert.deepEqual(reported({ id: 10, method: 'Input.dispatchKeyEvent', params: { type: 'keyDown', key: 'a', code: 'KeyA', text: 'a' } }), {
    method: 'Input.dispatchKeyEvent',
    command_id: 10,
    event_type: 'keyDown',
    text_length: 1,
  });
  assert.equal(reported({ id: 11, method: 'Input.dispatchKeyEvent', params: { type: 'keyDown', key: 'Enter' } })!.named_key, 'Enter');
  assert.deepEqual(
    reported({ id: 12, method: 'DOM.setFileInputFiles', params: { files: ['/home/kernel/secret.pdf', '/tmp/b'], backendNodeId: 5 } }),
    {
      method: 'DOM.setFileInputFiles',
      command_id: 12,
      file_count: 2,
      backend_node_id: 5,
    },
  );
  assert.deepEqual(
    reported({ id: 13, method: 'Page.captureScreenshot', params: { format: 'png', clip: { x: 1, y: 2, width: 3, height: 4, scale: 1 } } }),
    {
      method: 'Page.captureScreenshot',
      command_id: 13,
      format: 'png',
      clip_x: 1,
      clip_y: 2,
      clip_width: 3,
      clip_height: 4,
      clip_scale: 1,
    },
  );
  // An enum value that is not one (free text in its place) becomes `other`.
  assert.equal(reported({ id: 14, method: 'Input.dispatchMouseEvent', params: { type: 'my password is hunter2' } })!.event_type, 'other');
  assert.equal(reported({ id: 15, method: 'Page.handleJavaScriptDialog', params: { accept: true, promptText: 'secret' } })!.prompt_text_length, 6);
  for (const data of [reported({ id: 16, method: 'Page.navigate', params: { url: 'https://bank.example/?token=abc' } })]) {
    assert.doesNotMatch(JSON.stringify(data), /bank|token|abc/);
  }
});
